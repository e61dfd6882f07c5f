# A stand-in for the nixpkgs flake input, just enough to evaluate flake.nix
# offline (real nixpkgs cannot be fetched here and refuses Nix 2.8). Builders
# return their arguments tagged as derivations, so the test can read back
# what the flake passed; NixOS configurations are empty.
let
  inherit (builtins)
    concatStringsSep
    elem
    foldl'
    listToAttrs
    map
    replaceStrings
    ;

  drv =
    name: attrs:
    attrs
    // {
      type = "derivation";
      inherit name;
      outPath = "/nix/store/00000000000000000000000000000000-${name}";
      drvPath = "/nix/store/00000000000000000000000000000000-${name}.drv";
    };

  lib = {
    genAttrs = names: f: listToAttrs (map (n: { name = n; value = f n; }) names);
    inherit listToAttrs;
    optionalAttrs = c: a: if c then a else { };
    getExe = p: "${p}/bin/${p.meta.mainProgram}";
    concatMapStrings = f: l: concatStringsSep "" (map f l);
    concatMapStringsSep = sep: f: l: concatStringsSep sep (map f l);
    inherit concatStringsSep;
    escapeShellArg = s: "'${replaceStrings [ "'" ] [ "'\\''" ] (toString s)}'";
    mkForce = v: {
      _type = "override";
      priority = 50;
      content = v;
    };
    all = f: foldl' (a: x: a && f x) true;
    unique = foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ];
    concatMap = f: l: builtins.concatLists (map f l);
    optionalString = c: s: if c then s else "";
    nixosSystem =
      { modules }:
      {
        config = {
          assertions = [ ];
          system.build.toplevel = drv "nixos-system" { };
          environment.etc."systemd/system".source = drv "system-units" { };
          environment.etc."caddy/caddy_config".source = drv "caddy-config" { };
        };
        stub.modules = modules;
      };
  };

  pkg = name: drv name { meta.mainProgram = name; };

  pkgsFor = system: {
    inherit system;
    buildGoModule = args: drv "${args.pname}-${args.version}" args;
    writeShellApplication = args: drv args.name (args // { meta.mainProgram = args.name; });
    runCommand = name: env: script: drv name (env // { inherit script; });
    mkShell = args: drv "shell" args;
    testers.runNixOSTest = args: drv "vm-test-run-${args.name}" args;
    nixfmt = pkg "nixfmt";
    go = pkg "go";
    gnumake = pkg "make";
    nix = pkg "nix";
    shellcheck = pkg "shellcheck";
    tmux = pkg "tmux";
    systemd = pkg "systemd";
    qemu = pkg "qemu";
    diffutils = pkg "diffutils";
    caddy = pkg "caddy";
    linkFarm = name: entries: drv name { inherit entries; };
  };
in
{
  inherit lib;
  legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ] pkgsFor;
}
