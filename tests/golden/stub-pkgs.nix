# Stand-ins for the nixpkgs packages the offline evaluation can name: those
# the golden configurations use, the built-in agents' defaults and the
# runtime. Offline only: the rendered files never contain a package's own
# path (only the fixed-name per-user environment), so a name and an outPath
# suffice.
let
  pkg = name: {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };
in
builtins.listToAttrs (
  map
    (name: {
      inherit name;
      value = pkg name;
    })
    [
      "agent-box"
      "bashInteractive"
      "claude-code"
      "codex"
      "coreutils"
      "git"
      "opencode"
      "python3"
      "ripgrep"
    ]
)
