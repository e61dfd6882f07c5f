// Package flakecheck holds the offline checks of the flake (flake.nix,
// flake.lock, nix/): it has tests only.
//
// Real nixpkgs cannot be evaluated on the machines that run `make test`, so
// these tests check what plain Nix and Go can: every flake file parses; the
// flake's outputs evaluate against a stand-in nixpkgs
// (testdata/stub-nixpkgs.nix) with exactly the expected checks; the golden
// configurations and VM phases the flake names are the ones under tests/;
// the expected assertion messages are the ones the module produces; the lock
// pins the nixos-26.05 revision; and vendorHash is the hash of a fresh
// `go mod vendor`. The Nix builds themselves (`nix flake check`) run in CI
// with Nix and KVM.
package flakecheck
