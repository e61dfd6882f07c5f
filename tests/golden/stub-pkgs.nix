# Stand-ins for the few nixpkgs packages the golden configurations name.
# Offline only: the rendered files never contain a package's own path (only
# the fixed-name per-user environment), so a name and an outPath suffice.
let
  pkg = name: {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };
in
{
  coreutils = pkg "coreutils";
  git = pkg "git";
  python3 = pkg "python3";
  ripgrep = pkg "ripgrep";
}
