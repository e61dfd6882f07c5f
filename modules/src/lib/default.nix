# The pure core of the agent-box module: builtins only (no nixpkgs), so the
# offline suite evaluates exactly these bytes, as they appear inside the
# generated module, with a plain Nix evaluator. One job per file; each is a
# function of the finished set, naming what it uses in its arguments.
let
  files = {
    # The rules the runtime shares with this lib (internal/runtime/contract).
    contract =
      _:
      builtins.fromJSON (
        @@include:../../../internal/runtime/contract/contract.json@@
      );
    prim =
      @@include:prim.nix@@
      ;
    systemd =
      @@include:systemd.nix@@
      ;
    agents =
      @@include:agents.nix@@
      ;
    # One file per agent: its profile and its host-wide files.
    agentDefs = {
      shell =
        @@include:agents/shell.nix@@
        ;
      claude =
        @@include:agents/claude.nix@@
        ;
      codex =
        @@include:agents/codex.nix@@
        ;
      opencode =
        @@include:agents/opencode.nix@@
        ;
    };
    build =
      @@include:build.nix@@
      ;
    formats =
      @@include:formats.nix@@
      ;
    normalize =
      @@include:normalize.nix@@
      ;
    checks =
      @@include:checks/core.nix@@
      ;
    webChecks =
      @@include:checks/web.nix@@
      ;
    appChecks =
      @@include:checks/apps.nix@@
      ;
    appOriginChecks =
      @@include:checks/app-origins.nix@@
      ;
    envChecks =
      @@include:checks/env.nix@@
      ;
    sessionChecks =
      @@include:checks/sessions.nix@@
      ;
    attentionChecks =
      @@include:checks/attention.nix@@
      ;
    render = {
      instance =
        @@include:render/instance.nix@@
        ;
      sessions =
        @@include:render/sessions.nix@@
        ;
      slice =
        @@include:render/slice.nix@@
        ;
      seed =
        @@include:render/seed.nix@@
        ;
      agentsTable =
        @@include:render/agents-table.nix@@
        ;
      login =
        @@include:render/login.nix@@
        ;
      fail2ban =
        @@include:render/fail2ban.nix@@
        ;
      sysctl =
        @@include:render/sysctl.nix@@
        ;
      clients =
        @@include:render/clients.nix@@
        ;
      runtimeMount =
        @@include:render/runtime-mount.nix@@
        ;
      disk =
        @@include:render/disk.nix@@
        ;
      auth =
        @@include:render/auth.nix@@
        ;
      socket =
        @@include:render/socket.nix@@
        ;
      webDaemon =
        @@include:render/web-daemon.nix@@
        ;
      hooks =
        @@include:render/hooks.nix@@
        ;
      term =
        @@include:render/term.nix@@
        ;
      app =
        @@include:render/app.nix@@
        ;
      caddy =
        @@include:render/caddy.nix@@
        ;
      caddyApps =
        @@include:render/caddy-apps.nix@@
        ;
      guide =
        @@include:render/guide.nix@@
        ;
    };
    # The guide for agents (Claude's managed CLAUDE.md, Codex's
    # developer_instructions), before render.guide adds the host's parts.
    guideText =
      _:
      @@include:guide.md@@
      ;
    agentFiles =
      @@include:agent-files.nix@@
      ;
    webUnits =
      @@include:web-units.nix@@
      ;
    units =
      @@include:units.nix@@
      ;
    installed =
      @@include:installed.nix@@
      ;
  };

  self = builtins.mapAttrs (
    _: f: if builtins.isFunction f then f self else builtins.mapAttrs (_: g: g self) f
  ) files;
in
{
  inherit (self) contract systemd normalize render;
  inherit (self.agents) builtinAgents definitions;
  inherit (self.build)
    basePackages
    appStoreName
    storeNames
    runtimeGoMod
    runtimeStoreName
    ;
  inherit (self.checks) assertions failures homeMessage;
  inherit (self.units) dropins etcFiles mounts sysctlFile;
  inherit (self.installed) installed;
  web = {
    storeNames = self.build.webStoreNames;
    inherit (self.units) storeTexts;
  };
}
