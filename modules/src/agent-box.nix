# agent-box: a NixOS module that turns a host into a multi-user box for
# coding agents. Each services.agent-box.users.<name> is a normal Linux user
# whose tmux sessions agent-box@<name>.service supervises.
#
# This is the module's entry source; modules/agent-box.nix is generated from
# it by `go run ./cmd/assemble-module`. The options are declared in
# options.nix; every rendered byte, check and name comes from the
# builtins-only lib/, which the test suite evaluates offline. What is left
# here is the NixOS wiring.
{
  config,
  lib,
  pkgs,
  ...
}:

let
  inherit (lib)
    concatStrings
    filterAttrs
    mapAttrs
    mapAttrsToList
    mkDefault
    mkIf
    optional
    optionalAttrs
    ;

  # The option declarations: a function of lib, pkgs and what they default
  # to (applied at the end of this file).
  declarations =
    @@include:options.nix@@
    ;

  # Pure core (builtins only): normalisation, checks, renderers.
  agentBox =
    @@include:lib/default.nix@@
    ;

  # Verbatim systemd units, installed byte for byte through systemd.packages:
  # the agent instances', the web surface's (only when it is enabled) and
  # the apps' (only with some).
  units =
    @@include:units/@@
    ;
  webUnits =
    @@include:units/web/@@
    ;
  appUnits =
    @@include:units/apps/@@
    ;

  # The runtime's Go source, exactly what the test suite builds offline (the
  # longest part of the generated file; the wiring follows it).
  runtimeSources = {
    "cmd/agent-box" =
      @@include:../../cmd/agent-box/@@
      ;
    # what tmux runs in each pane (contract programs.spawn)
    "cmd/${spawnProgram}" =
      @@include:../../cmd/agent-box-exec/@@
      ;
    "internal/runtime" =
      @@include:../../internal/runtime/@@
      ;
  };

  version = "0.1.0";
  spawnProgram = agentBox.contract.programs.spawn.name;

  cfg = config.services.agent-box;
  n = agentBox.normalize cfg;
  caddyGroup = config.services.caddy.group;
  webUser = name: n.web.enable && builtins.elem name n.web.users;

  # The runtime, built from the embedded source with a require-free go.mod.
  runtimeSrc = pkgs.runCommand "agent-box-src" { } (
    ''
      mkdir -p "$out"
      cp ${pkgs.writeText "go.mod" agentBox.runtimeGoMod} "$out/go.mod"
    ''
    + concatStrings (
      mapAttrsToList (
        dir: files:
        concatStrings (
          mapAttrsToList (file: text: ''
            install -D -m 0644 ${pkgs.writeText "agent-box-src-file" text} "$out/${dir}/${file}"
          '') files
        )
      ) runtimeSources
    )
  );
  runtime = pkgs.buildGoModule {
    pname = "agent-box";
    inherit version;
    src = runtimeSrc;
    vendorHash = null;
    subPackages = [
      "cmd/agent-box"
      "cmd/${spawnProgram}"
    ];
    doCheck = false;
    env.CGO_ENABLED = 0;
    ldflags = [
      "-s"
      "-w"
      "-X main.version=${version}"
    ];
    meta.mainProgram = "agent-box";
  };

  unitsPackage = pkgs.runCommand "agent-box-units" { } (
    concatStrings (
      mapAttrsToList (name: text: ''
        install -D -m 0444 ${pkgs.writeText "agent-box-unit" text} "$out/lib/systemd/system/${name}"
      '') (
        units
        // optionalAttrs n.web.enable webUnits
        // optionalAttrs (n.apps != [ ]) appUnits
        // agentBox.mounts n
      )
    )
  );

  # The workspace's browser libraries (contract webAssets): npm tarballs at
  # pinned versions, checked against the registry's integrity values,
  # reduced to the files the web daemon serves and their licenses.
  webAssets =
    let
      a = agentBox.contract.webAssets;
    in
    pkgs.runCommand "agent-box-web-assets" { } (
      ''
        mkdir -p "$out/${a.dir}"
      ''
      + concatStrings (
        map (
          p:
          let
            tgz = pkgs.fetchurl {
              url = p.tarball;
              hash = p.integrity;
            };
          in
          concatStrings (
            mapAttrsToList (member: file: ''
              tar -xzOf ${tgz} ${lib.escapeShellArg member} > "$out/${a.dir}/${file}"
            '') p.files
          )
        ) a.packages
      )
    );

  # One fixed-name environment and two fixed-name files per user: the only
  # varying part of every rendered store path is its hash.
  userPaths =
    u:
    let
      env = pkgs.symlinkJoin {
        name = u.files.env;
        paths = [
          cfg.package
          pkgs.tmux
        ]
        ++ map (p: pkgs.${p}) agentBox.basePackages
        ++ cfg.extraPackages
        ++ map (name: cfg.agents.${name}.package) u.agentNames
        # exec-session asks OpenCode's database whether a session is there
        ++ optional (builtins.any (name: cfg.agents.${name}.setup == "opencode") u.agentNames) pkgs.sqlite
        ++ optional (webUser u.name) pkgs.ttyd
        ++ optional (webUser u.name) webAssets
        # agent-box app runs systemctl and journalctl as the user
        ++ optional (u.apps != [ ]) config.systemd.package;
      };
    in
    {
      env = "${env}";
      seed = "${pkgs.writeText u.files.seed (agentBox.render.seed u)}";
      agents = "${pkgs.writeText u.files.agents (agentBox.render.agentsTable n u "${env}")}";
    };

  # Where the renderers find things: the per-user files, the auth service's
  # environment and configuration (fixed names), Caddy's group.
  host = {
    pathsOf = userPaths;
    # An app's PATH: its packages, at a fixed store name.
    appEnv =
      a:
      "${
        pkgs.symlinkJoin {
          name = a.files;
          paths = a.packages;
        }
      }";
    runtime = "${
      pkgs.symlinkJoin {
        name = agentBox.runtimeStoreName;
        paths = [ cfg.package ];
      }
    }";
    authEnv = "${
      pkgs.symlinkJoin {
        name = agentBox.web.storeNames.authEnv;
        paths = [ cfg.package ];
      }
    }";
    authConfig = "${webFiles.${agentBox.web.storeNames.authConfig}}";
    webFile = name: "${webFiles.${name}}";
    inherit caddyGroup;
    nft = "${pkgs.nftables}/bin/nft";
    nftables = config.networking.nftables.enable;
  };
  webFiles = mapAttrs pkgs.writeText (agentBox.web.storeTexts n);
  hostPtraceScope = config.boot.kernel.sysctl."kernel.yama.ptrace_scope" or null;
in
{
  options.services.agent-box = declarations {
    inherit lib pkgs;
    inherit (agentBox) builtinAgents contract;
    defaultPackage = runtime;
  };

  config = mkIf cfg.enable {
    assertions =
      agentBox.assertions n caddyGroup
      ++ optional (n.web.enable && hostPtraceScope != null) {
        # boot.kernel.sysctl lands in 60-nixos.conf, read after ours
        assertion = hostPtraceScope >= 1;
        message = "boot.kernel.sysctl.\"kernel.yama.ptrace_scope\" = ${toString hostPtraceScope} overrides services.agent-box.web.ptraceScope: with the web surface on, use 1 or more (at 0 an agent can attach to its own ttyd and web daemon and serve its page in the operator's terminal).";
      }
      ++ map (
        name:
        let
          home = config.users.users.${name}.home;
        in
        {
          assertion = home == "/home/${name}";
          message = agentBox.homeMessage name home;
        }
      ) n.userNames;

    # Every built-in agent exists; its attributes are option defaults.
    services.agent-box = agentBox.definitions;

    users.users = mapAttrs (name: u: {
      isNormalUser = true;
      home = "/home/${name}";
      createHome = mkDefault true;
      inherit (u) extraGroups;
      # The session CLI for SSH and console logins.
      packages = [ cfg.package ];
    }) n.users;

    systemd.packages = [ unitsPackage ];

    # Instance and slice drop-ins, installed verbatim as
    # <unit>.d/overrides.conf (asDropin: never a unit shadowing the template).
    systemd.units = mapAttrs (_: d: {
      overrideStrategy = "asDropin";
      inherit (d) text wantedBy;
    }) (agentBox.dropins n host);

    # Per user, the unit's AGENT_BOX_* values for the CLI of a plain login
    # (root-owned, in the store).
    environment.etc = mapAttrs (_: text: { inherit text; }) (agentBox.etcFiles n host);

    # The web surface: Caddy in front (docs/web-contract.md). Its admin API
    # is a unix socket in a 0700 directory; the agent-box sites and options
    # are store files the Caddyfile imports.
    services.caddy = mkIf n.web.enable {
      enable = true;
      globalConfig = "import ${webFiles.${agentBox.web.storeNames.caddyGlobal}}";
      extraConfig = "import ${webFiles.${agentBox.web.storeNames.caddySites}}";
    };
    systemd.services.caddy.serviceConfig = mkIf n.web.enable {
      RuntimeDirectory = "caddy";
      RuntimeDirectoryMode = agentBox.contract.sockets.caddyAdmin.dirMode;
    };
    networking.firewall.allowedTCPPorts = mkIf (n.web.enable && n.web.openFirewall) (
      [ n.web.port ] ++ optional (n.web.tls == "acme") 80
    );
    # fail2ban bans addresses that fail to log in: the lib's filter and jail
    # are in environment.etc above (fail2ban/filter.d, fail2ban/jail.d), the
    # same bytes the offline suite checks; a change restarts fail2ban.
    services.fail2ban.enable = mkIf n.web.fail2ban.enable true;

    # The status socket's group (the supplementary group of each web
    # daemon and of the supervisor of each user with an origin) and the
    # notify feed socket's (the auth service's), only when a login has
    # notifications.
    users.groups = mkIf n.web.enable (
      {
        ${agentBox.contract.sockets.authStatus.group} = { };
      }
      // optionalAttrs (agentBox.render.auth.notifying n.web != [ ]) {
        ${agentBox.contract.sockets.notifyFeed.group} = { };
      }
    );
    systemd.services.fail2ban.restartTriggers = mkIf n.web.fail2ban.enable (
      mapAttrsToList (_: text: builtins.hashString "sha256" text) (
        filterAttrs (path: _: lib.hasPrefix "fail2ban/" path) (agentBox.etcFiles n host)
      )
    );
    # The apps' directories (tmpfiles.d/agent-box-apps.conf in
    # environment.etc above, which nixpkgs' tmpfiles module leaves beside
    # its own) are made at switch, not only at the next boot: an app added
    # by a switch needs its directory before its unit starts.
    systemd.services.systemd-tmpfiles-resetup.restartTriggers = [
      (agentBox.etcFiles n host)."tmpfiles.d/agent-box-apps.conf"
    ];
    # The web surface's kernel setting (environment.etc above) applies at
    # switch, not only at the next boot.
    systemd.services.systemd-sysctl.restartTriggers = mkIf (n.web.enable && n.web.ptraceScope != null) [
      (agentBox.etcFiles n host).${agentBox.sysctlFile}
    ];
    # `agent-box app`: polkit lets each user start, stop, restart and
    # reset-failed exactly its own apps' units (the rules file is in
    # environment.etc above; polkitd reads /etc/polkit-1/rules.d).
    security.polkit.enable = mkIf (n.apps != [ ]) true;
    # A root filesystem that keeps users' quotas (ext4's quota feature, for
    # users.<u>.diskQuota: docs/operating.md, "Disk") loads the quota
    # format when it is mounted, in the initrd: a module in many kernels,
    # which the initrd must hold (where it is built in, makeModulesClosure
    # finds it builtin and copies nothing).
    boot.initrd.availableKernelModules = mkIf (builtins.any (u: u.diskQuota != null) (builtins.attrValues n.users)) [
      "quota_v2"
    ];
    # `agent-box web hash-password` and `web revoke` for the operator (root).
    environment.systemPackages = mkIf n.web.enable [ cfg.package ];
  };
}
