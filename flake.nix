{
  description = "agent-box: a NixOS module that turns a host into a shared box for coding agents";

  # nixos-26.05 or later: switch-to-configuration stops removed template
  # instances only since 2026-04-22 (vm-switch relies on it).
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  outputs =
    { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      inherit (lib) genAttrs listToAttrs optionalAttrs;

      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];

      version = "0.1.0";

      # The single-file module: what hosts import, and what every check uses.
      module = ./modules/agent-box.nix;

      # NAR hash of the vendor/ directory `go mod vendor` writes for this
      # repository (internal/flakecheck recomputes it; update it when go.mod,
      # go.sum or the set of imported packages changes).
      vendorHash = "sha256-PYFG6gJSg1N0xGjmnagNW3+aOlVNl9q7Qo8SMbTgYtQ=";

      # Golden configurations (tests/golden/<name>/) and scenario phases
      # (tests/scenarios/phases): the same fixtures the offline tiers use.
      goldenDir = ./tests/golden;
      goldens = import ./nix/goldens.nix;
      scenariosDir = ./tests/scenarios;
      scenarios = import ./nix/scenarios.nix scenariosDir;

      perSystem =
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};
          nixos = import ./nix/nixos.nix { inherit lib system; };

          assemble-module = pkgs.buildGoModule {
            pname = "assemble-module";
            inherit version vendorHash;
            src = self;
            subPackages = [ "cmd/assemble-module" ];
            env.CGO_ENABLED = 0;
            # Its tests need a Nix evaluator with a store and the whole
            # repository; the go-tests check runs them.
            doCheck = false;
            meta = {
              description = "Assembles the single-file agent-box NixOS module from modules/src";
              mainProgram = "assemble-module";
            };
          };

          # Checks Caddy's adapted JSON against the web contract; the golden
          # check runs it on the Caddyfile NixOS installs.
          check-caddy-config = pkgs.buildGoModule {
            pname = "check-caddy-config";
            inherit version vendorHash;
            src = self;
            subPackages = [ "cmd/check-caddy-config" ];
            env.CGO_ENABLED = 0;
            doCheck = false;
            meta.mainProgram = "check-caddy-config";
          };

          update-golden = pkgs.writeShellApplication {
            name = "agent-box-update-golden";
            runtimeInputs = [
              pkgs.go
              pkgs.nix
            ];
            # The OFFLINE renderer writes the fixture: a golden regenerated
            # from the NixOS build would only restate what it checks.
            text = ''
              if [ ! -f go.mod ] || [ ! -d tests/golden ]; then
                echo "update-golden: run this from the root of the agent-box repository" >&2
                exit 2
              fi
              go test ./internal/runtime/contract ./internal/golden ./internal/optiondocs ./internal/contractdocs ./internal/doclists -run 'TestValuesAreTheJSONs|TestFixtures|TestTheOptionReferenceIsTheDeclarations|TestTheDocsTablesAreTheContract|TestTheDocsListsAreGenerated' -update "$@"
              echo "update-golden: review 'git diff internal/runtime/contract tests/golden README.md docs' like code before committing" >&2
            '';
          };
        in
        {
          packages = {
            inherit assemble-module;
            default = assemble-module;
          };

          apps = {
            # Regenerates modules/agent-box.nix from the current directory
            # (the repository root), like `go run ./cmd/assemble-module`.
            assemble = {
              type = "app";
              program = lib.getExe assemble-module;
              meta.description = "Regenerate modules/agent-box.nix in the current directory";
            };
            update-golden = {
              type = "app";
              program = lib.getExe update-golden;
              meta.description = "Regenerate tests/golden, the option reference and the docs' generated lists with the offline renderer";
            };
          };

          devShells.default = pkgs.mkShell {
            packages = [
              pkgs.go
              pkgs.gnumake
              pkgs.nix
              pkgs.shellcheck
              pkgs.tmux
              pkgs.systemd # systemd-analyze for the unit checks
              pkgs.qemu # the offline VM tier
            ];
          };

          formatter = pkgs.nixfmt;

          checks = {
            module-generated-up-to-date =
              pkgs.runCommand "agent-box-module-generated-up-to-date"
                { nativeBuildInputs = [ assemble-module ]; }
                ''
                  # The banner names the entry as given: run it like the
                  # README does, at the source root without arguments.
                  cp -r ${self} source
                  chmod -R u+w source
                  cd source
                  assemble-module -check
                  touch $out
                '';

            # A host that imports nothing but a copy of the one file.
            module-single-file =
              let
                single = builtins.path {
                  path = module;
                  name = "agent-box.nix";
                };
                toplevel =
                  (nixos [
                    single
                    {
                      services.agent-box = {
                        enable = true;
                        users.alice.sessions.main = { };
                      };
                    }
                  ]).config.system.build.toplevel;
              in
              pkgs.runCommand "agent-box-module-single-file" { } ''
                echo "evaluated: ${builtins.unsafeDiscardStringContext toplevel.drvPath}"
                touch $out
              '';

            golden = import ./nix/golden.nix {
              inherit
                lib
                pkgs
                nixos
                module
                goldenDir
                goldens
                check-caddy-config
                ;
            };

            assertions = import ./nix/assertions.nix {
              inherit
                lib
                pkgs
                nixos
                module
                ;
            };

            go-tests = import ./nix/go-tests.nix {
              inherit
                lib
                pkgs
                version
                vendorHash
                ;
              src = self;
            };
          }
          # NixOS VM tests need KVM; CI runs them on x86_64 only.
          // optionalAttrs (system == "x86_64-linux") (
            listToAttrs (
              map (test: {
                name = "vm-${test}";
                value = import ./nix/vm-scenario.nix {
                  inherit
                    lib
                    pkgs
                    module
                    goldenDir
                    scenariosDir
                    scenarios
                    test
                    vendorHash
                    ;
                  src = self;
                };
              }) (builtins.attrNames scenarios.tests)
            )
            // {
              vm-switch = import ./nix/vm-switch.nix { inherit pkgs module; };
            }
          );
        };

      outputsFor = name: genAttrs systems (system: (perSystem system).${name});
    in
    {
      nixosModules = {
        default = module;
        agent-box = module;
      };

      packages = outputsFor "packages";
      apps = outputsFor "apps";
      devShells = outputsFor "devShells";
      formatter = outputsFor "formatter";
      checks = outputsFor "checks";
    };
}
