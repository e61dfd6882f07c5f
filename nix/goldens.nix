# The golden configurations the flake checks: every directory of
# tests/golden (each holds config.nix, files/ and links). The directory
# listing is the one list; the Go tests read it too (internal/golden).
let
  entries = builtins.readDir ../tests/golden;
in
builtins.filter (name: entries.${name} == "directory") (builtins.attrNames entries)
