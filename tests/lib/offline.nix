# The offline evaluation of the module: its own option declarations and lib
# (as embedded in the generated module; internal/module writes them out)
# evaluated against the stand-in lib (stub-lib.nix) and stand-in packages
# (tests/golden/stub-pkgs.nix). The goldens, the lib's table cases and the
# option reference (docs/options.md) all come from here.
{
  # lib/default.nix, options.nix and units/ as embedded in the module
  # (units = { base; web; apps; }: units/, units/web/ and units/apps/).
  lib,
  declarations,
  units,
  # The store hash of every path in the goldens (internal/golden.ZeroHash).
  zeroHash,
}:
let
  stub = import ./stub-lib.nix;
  pkgs = import ../golden/stub-pkgs.nix;
  prefix = [
    "services"
    "agent-box"
  ];
  options = declarations {
    lib = stub;
    inherit pkgs;
    inherit (lib) builtinAgents contract;
    defaultPackage = pkgs.agent-box;
  };
in
rec {
  inherit lib pkgs;

  # A configuration of services.agent-box (what a host writes) -> the value
  # of config.services.agent-box: the host's definitions and the module's
  # own (the built-in agents), merged and filled from the declarations.
  # Throws, as NixOS does, on an unknown option or a value of the wrong type.
  eval =
    config:
    stub.evalOptions {
      inherit prefix options;
      definitions = [
        lib.definitions
        config
      ];
    };

  normalize = config: lib.normalize (eval config);

  # Messages of the failed assertions (the lib's, with Caddy's group
  # "caddy"; the glue adds the home check, which needs users.users).
  failures = config: lib.failures (normalize config) "caddy";

  # Every assertion's message, passing or not (a tool that evaluates the
  # list strictly, as a real evaluation of the module may, must not fail).
  messages = config: map (a: a.message) (lib.assertions (normalize config) "caddy");

  # The installed files and links, with zero-hash store paths.
  storePath = name: "/nix/store/${zeroHash}-${name}";
  installed = config: lib.installed (normalize config) units storePath;

  # Documentation entries of every option, sorted by path.
  docs = stub.optionDocs prefix options;
}
