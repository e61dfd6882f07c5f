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
  hello = pkg "hello";
  git = pkg "git";
  ripgrep = pkg "ripgrep";
}
