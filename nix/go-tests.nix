# Check `go-tests`: the offline Go suite (`go test ./...`, what `make test`
# runs) inside the Nix sandbox, with the same vendored dependencies as the
# assemble-module package.
#
# The tests that need Nix get a private store under $TMPDIR (the pattern of
# nixpkgs' lib/tests/test-with-nix.nix); shellcheck and tmux come from
# nixpkgs (cmd/agent-box's supervisor tests find tmux, sleep, sh and false on
# PATH and fail, never skip, without them), and so does sqlite3 (OpenCode's
# database lookups). Left out explicitly, because the sandbox cannot give them what they
# need (each still runs in `make test`):
# - internal/vmtest (the offline QEMU tier: needs /dev/kvm or TCG, a Debian
#   image and a package mirror; the vm-* checks are its NixOS counterpart);
# - TestUnitsPassSystemdAnalyzeVerify and TestUnitsExposureIsUnderTheirCeilings (copy the host's
#   /usr/lib/systemd/system, which the sandbox does not have);
# - TestVendorHashMatchesGoModVendor (runs `go mod vendor`, which needs the
#   module proxy or a filled module cache; the build of this check proves
#   the hash anyway);
# - TestOpenCodeUnattended (fetches the pinned OpenCode from the npm
#   registry and needs root for a network namespace).
{
  lib,
  pkgs,
  src,
  version,
  vendorHash,
}:

let
  skip = [
    "TestUnitsPassSystemdAnalyzeVerify"
    "TestUnitsExposureIsUnderTheirCeilings"
    "TestVendorHashMatchesGoModVendor"
    "TestOpenCodeUnattended"
  ];
  excludedPackages = [
    "github.com/agent-box/agent-box/internal/vmtest"
  ];
in
pkgs.buildGoModule {
  pname = "agent-box-go-tests";
  inherit version src vendorHash;

  # Something must be built; the point of this derivation is its checkPhase.
  subPackages = [ "cmd/assemble-module" ];
  env.CGO_ENABLED = 0;

  nativeCheckInputs = [
    pkgs.nix
    pkgs.shellcheck
    pkgs.sqlite
    pkgs.tmux
  ];

  checkPhase = ''
    runHook preCheck
    # Tests may read their own sources; buildGoModule adds -trimpath.
    export GOFLAGS=''${GOFLAGS//-trimpath/}
    export HOME=$TMPDIR/home
    mkdir -p "$HOME"

    # A private, empty Nix store: the tests only evaluate.
    export TEST_ROOT=$TMPDIR/nix-test
    export NIX_BUILD_HOOK=
    export NIX_CONF_DIR=$TEST_ROOT/etc
    export NIX_LOCALSTATE_DIR=$TEST_ROOT/var
    export NIX_LOG_DIR=$TEST_ROOT/var/log/nix
    export NIX_STATE_DIR=$TEST_ROOT/var/nix
    export NIX_STORE_DIR=$TEST_ROOT/store
    export PAGER=cat
    nix-store --init

    packages=$(go list ./... | grep -vxF ${
      lib.concatMapStringsSep " " (p: "-e ${lib.escapeShellArg p}") excludedPackages
    })
    echo "go-tests: go test -count=1 -skip '^(${lib.concatStringsSep "|" skip})$'" $packages
    go test -count=1 -skip '^(${lib.concatStringsSep "|" skip})$' $packages
    runHook postCheck
  '';
}
