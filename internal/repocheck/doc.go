// Package repocheck holds repository-wide checks (go.mod, every .nix file,
// every shell script); it has tests only.
package repocheck
