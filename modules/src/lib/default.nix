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
    build =
      @@include:build.nix@@
      ;
    normalize =
      @@include:normalize.nix@@
      ;
    web =
      @@include:web.nix@@
      ;
    checks =
      @@include:assertions.nix@@
      ;
    render = {
      instance =
        @@include:render/instance.nix@@
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
    };
    units =
      @@include:units.nix@@
      ;
  };

  self = builtins.mapAttrs (
    _: f: if builtins.isFunction f then f self else builtins.mapAttrs (_: g: g self) f
  ) files;
in
{
  inherit (self) contract systemd normalize render;
  inherit (self.agents) builtinAgents definitions;
  inherit (self.build) basePackages storeNames runtimeGoMod;
  inherit (self.checks) assertions failures homeMessage;
  inherit (self.units) dropins etcFiles installed;
  web = {
    inherit (self.web) storeNames storeTexts;
  };
}
