# agent-box: a NixOS module that turns a host into a multi-user box for
# coding agents. Each services.agent-box.users.<name> is a normal Linux user
# whose tmux sessions agent-box@<name>.service supervises.
#
# This is the module's entry source; modules/agent-box.nix is generated from
# it by `go run ./cmd/assemble-module`. The glue here is thin: defaults,
# validation and every rendered byte come from the builtins-only lib/, which
# the test suite evaluates offline.
{
  config,
  lib,
  pkgs,
  ...
}:

let
  inherit (lib)
    concatStrings
    listToAttrs
    literalExpression
    mapAttrs
    mapAttrsToList
    mkDefault
    mkEnableOption
    mkIf
    mkOption
    optionalAttrs
    types
    ;

  # Pure core (builtins only): options, defaults, checks, renderers.
  agentBox =
    @@include:lib/default.nix@@
    ;

  # Verbatim systemd units, installed byte for byte through systemd.packages.
  units =
    @@include:units/@@
    ;

  # The runtime's Go source, exactly what the test suite builds offline.
  runtimeSources = {
    "cmd/agent-box" =
      @@include:../../cmd/agent-box/@@
      ;
    "internal/runtime" =
      @@include:../../internal/runtime/@@
      ;
  };

  version = "0.1.0";

  cfg = config.services.agent-box;
  n = agentBox.normalize cfg;

  # Option specs (lib/options.nix) -> option declarations.
  typeOf =
    spec:
    {
      "bool" = types.bool;
      "str" = types.str;
      "int" = types.int;
      "nullOr str" = types.nullOr types.str;
      "nullOr int" = types.nullOr types.int;
      "listOf str" = types.listOf types.str;
      "attrsOf str" = types.attrsOf types.str;
      "package" = types.package;
      "listOf package" = types.listOf types.package;
      "submodule" = types.submodule { options = declare spec.options; };
      "attrsOf submodule" = types.attrsOf (types.submodule { options = declare spec.options; });
    }
    .${spec.type};
  declare = mapAttrs (
    name: spec:
    if name == "enable" then
      mkEnableOption "agent-box"
    else
      mkOption (
        {
          type = typeOf spec;
          inherit (spec) description;
        }
        // optionalAttrs (spec ? default) { inherit (spec) default; }
        // optionalAttrs (spec ? defaultText) { defaultText = lib.literalMD spec.defaultText; }
        // optionalAttrs (spec ? example) { example = literalExpression spec.example; }
      )
  );

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
    subPackages = [ "cmd/agent-box" ];
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
      '') units
    )
  );

  agentPackage =
    name:
    let
      a = n.agents.${name};
    in
    if a.package != null then a.package else pkgs.${a.packageAttr};

  # One fixed-name environment and two fixed-name files per user: the only
  # varying part of every rendered store path is its hash.
  userPaths =
    u:
    let
      env = pkgs.symlinkJoin {
        name = u.files.env;
        paths = [
          runtime
          pkgs.tmux
        ]
        ++ map (p: pkgs.${p}) agentBox.basePackages
        ++ cfg.extraPackages
        ++ map agentPackage u.agentNames;
      };
    in
    {
      env = "${env}";
      seed = "${pkgs.writeText u.files.seed (agentBox.seed u)}";
      agents = "${pkgs.writeText u.files.agents (agentBox.agentsTable n u "${env}")}";
    };
in
{
  options.services.agent-box = declare agentBox.options;

  config = mkIf cfg.enable {
    assertions =
      agentBox.assertions cfg
      ++ map (name: {
        assertion = config.users.users.${name}.home == "/home/${name}";
        message = "services.agent-box.users.${name}: users.users.${name}.home is ${config.users.users.${name}.home}, but agent-box@.service uses /home/${name}; remove the home override.";
      }) n.userNames;

    # The built-in agents, overridable attribute by attribute.
    services.agent-box.agents = mapAttrs (_: b: {
      package = mkDefault pkgs.${b.packageAttr};
      command = mkDefault b.command;
      args = mkDefault b.args;
    }) agentBox.builtinAgents;

    users.users = mapAttrs (name: u: {
      isNormalUser = true;
      home = "/home/${name}";
      createHome = mkDefault true;
      inherit (u) extraGroups;
      # The session CLI for SSH and console logins.
      packages = [ runtime ];
    }) n.users;

    systemd.packages = [ unitsPackage ];

    systemd.units =
      listToAttrs (
        map (name: {
          name = "agent-box@${name}.service";
          value = {
            overrideStrategy = "asDropin";
            text = agentBox.dropin n.users.${name} (userPaths n.users.${name}) n.defaultAgent;
            wantedBy = [ "multi-user.target" ];
          };
        }) n.userNames
      )
      // {
        "agent-box.slice" = {
          overrideStrategy = "asDropin";
          text = agentBox.sliceDropin n.slice;
        };
      };
  };
}
