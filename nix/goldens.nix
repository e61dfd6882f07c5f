# The golden configurations the flake checks: each name is a directory
# tests/golden/<name>/ holding config.nix, files/ and links. Listed by hand
# (not read from the directory) so that a new fixture is a deliberate change
# here too; internal/flakecheck fails when this list and tests/golden/*/
# differ.
[
  "hostile"
  "minimal"
  "two-users"
]
