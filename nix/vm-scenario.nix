# Checks `vm-<test>`: the scenario scripts of tests/scenarios, unchanged, in
# a NixOS VM that imports the module with the phase's golden configuration.
#
# One VM test per group of phases (see scenarios.nix). The node installs the
# nixpkgs attributes of tests/scenarios/requirements and the scripts (under
# /etc/agent-box-test/scenarios); each phase runs as root as
# `bash <dir>/<phase>.sh` and must print TAP (a plan `1..N`, N `ok`/`not ok`
# lines, a final `# END`: the contract of tests/scenarios/lib.sh, parsed the
# way internal/vmtest does) and exit 0. A phase marked `crash` is followed by
# a hard power-off (machine.crash()) and a boot of the same disk, as the
# offline tier does.
{
  lib,
  pkgs,
  module,
  goldenDir,
  scenariosDir,
  scenarios,
  test,
  # The repository and its Go modules' hash: the claude golden's node
  # builds the scripted model (internal/scriptedmodel) from them.
  src,
  vendorHash,
}:

let
  inherit (lib) concatMapStringsSep listToAttrs unique;

  phases = scenarios.tests.${test};
  configs = unique (map (p: p.config) phases);
  golden =
    if builtins.length configs == 1 then
      builtins.head configs
    else
      throw "tests/scenarios/phases: the phases of ${test} use several golden configurations (${toString configs}); one VM boots one configuration";

  pyBool = b: if b then "True" else "False";

  # The claude golden runs Claude Code (unfree) and Codex (nixpkgs' own
  # versions) against the scripted model on 127.0.0.1:8099, as the offline
  # tier's guest does with the pinned ones (internal/vmtest, agentclis.go),
  # with the same fake API key file.
  claude = golden == "claude";
  scriptedModel = pkgs.buildGoModule {
    pname = "scripted-model";
    version = "0";
    inherit src vendorHash;
    subPackages = [ "internal/scriptedmodel/scripted-model" ];
    env.CGO_ENABLED = "0";
    doCheck = false;
  };
in
pkgs.testers.runNixOSTest {
  name = "agent-box-vm-${test}";

  nodes.machine =
    { pkgs, options, ... }:
    {
      imports = [ module ];
      services.agent-box = import (goldenDir + "/${golden}/config.nix") { inherit pkgs; };
      environment.systemPackages = map (attr: pkgs.${attr}) scenarios.requirements;
      # In the system closure, so the scripts are in the guest however its
      # store is provided.
      environment.etc = {
        "agent-box-test/scenarios".source = scenariosDir;
      }
      # The web golden's hashedPasswordFile paths: the public demo logins'
      # hashes, root-only as docs/operating.md says.
      // listToAttrs (
        map (l: {
          name = "agent-box-demo/${l.name}.hash";
          value = {
            text = l.hash + "\n";
            mode = "0400";
          };
        }) scenarios.demoLogins
      )
      # Its webhooks' secretFile paths: the public demo secrets.
      // listToAttrs (
        map (h: {
          name = "agent-box-demo/${h.file}";
          value = {
            text = h.secret + "\n";
            mode = "0400";
          };
        }) scenarios.demoHooks
      )
      # Its notify.urlFile paths: the public demo URLs.
      // listToAttrs (
        map (l: {
          name = "agent-box-demo/${l.name}.notify";
          value = {
            text = l.url + "\n";
            mode = "0400";
          };
        }) scenarios.demoNotify
      )
      // lib.optionalAttrs claude {
        "agent-box-demo/ada.claude.env" = {
          text = "ANTHROPIC_API_KEY=sk-ant-api03-scripted-model-kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\n";
          mode = "0400";
        };
      };
      # The lifecycle scenario's second configuration (its switch_to next):
      # a second build of agent-box and, for alice, LIFECYCLE=new; the
      # scenario switches to it and back with switch-to-configuration.
      specialisation = lib.optionalAttrs (test == "lifecycle") {
        next.configuration = {
          services.agent-box.package = options.services.agent-box.package.default.overrideAttrs (old: {
            ldflags = old.ldflags ++ [ "-X main.version=next" ];
          });
          services.agent-box.users.alice.environment.LIFECYCLE = "new";
        };
      };
      nixpkgs.config.allowUnfreePredicate = pkg: claude && lib.getName pkg == "claude-code";
      systemd.services.scripted-model = lib.mkIf claude {
        description = "scripted model for the VM tests (internal/scriptedmodel)";
        wantedBy = [ "multi-user.target" ];
        before = map (u: "agent-box-sessions@${u}.service") (builtins.attrNames (import (goldenDir + "/claude/config.nix") { inherit pkgs; }).users);
        serviceConfig.ExecStart = "${scriptedModel}/bin/scripted-model -listen 127.0.0.1:8099 -log /var/log/scripted-model.jsonl";
      };
      # The golden host's firewall (the offline tier's guest has nftables,
      # and the web golden's fail2ban action is the nftables one).
      networking.nftables.enable = true;
      # The offline tier boots with -m 1536 -smp 2; the goldens' limits are
      # sized for that guest.
      virtualisation.memorySize = 1536;
      virtualisation.cores = 2;
      virtualisation.diskSize = 4096;
      # The root filesystem keeps users' usage (ext4's quota feature), as
      # docs/operating.md ("Disk") asks of a host for users.<u>.diskQuota
      # and the offline tier's guest has (internal/vmtest: mkfs.ext4 -O
      # quota): the driver makes the empty root image with host.pkgs'
      # mkfs.ext4, given the feature here.
      virtualisation.host.pkgs = lib.mkForce (
        pkgs
        // {
          e2fsprogs = pkgs.writeShellScriptBin "mkfs.ext4" ''
            exec ${pkgs.e2fsprogs}/bin/mkfs.ext4 -O quota -E quotatype=usrquota "$@"
          '';
        }
      );
    };

  testScript = ''
    import re

    SCENARIOS = "/etc/agent-box-test/scenarios"
    PHASES: list[tuple[str, bool]] = [
        ${concatMapStringsSep "\n    " (p: "(\"${p.name}\", ${pyBool p.crash}),") phases}
    ]


    def run_phase(phase: str) -> str:
        status, out = machine.execute(
            f"bash {SCENARIOS}/{phase}.sh 2>&1", timeout=1800
        )
        print(f"--- TAP of {phase} (exit status {status}) ---")
        print(out)
        plan = -1
        results: list[str] = []
        end = False
        for raw in out.splitlines():
            line = raw.replace("\r", "")
            if end:
                continue
            if line == "# END":
                end = True
            elif plan < 0 and re.fullmatch(r"1\.\.(\d+)", line):
                plan = int(line[3:])
            elif re.match(r"(ok|not ok) \d+", line):
                results.append(line)
        failed = [r for r in results if r.startswith("not ok")]
        assert plan >= 0, f"{phase}: no TAP plan line (1..N)"
        assert end, f"{phase}: no final '# END' (the phase did not finish)"
        assert not failed, f"{phase}: failed tests:\n" + "\n".join(failed)
        assert len(results) == plan, f"{phase}: plan says {plan} tests, ran {len(results)}"
        assert status == 0, f"{phase}: exit status {status}"
        return out


    def ids(out: str, prefix: str) -> list[str]:
        return [l[len(prefix):].strip() for l in out.splitlines() if l.startswith(prefix)]


    machine.wait_for_unit("multi-user.target")
    # Webhook ids a crash phase acknowledged ("# acked: ID"), to be found
    # among those the next boot prints as stored ("# stored: ID"). Here the
    # phase's output returns when its sender stops (it holds the output
    # open), so the power is cut right after the last acknowledgement, not
    # during a delivery as in the offline tier.
    acked: list[str] = []
    for phase, crash in PHASES:
        with subtest(f"scenario phase {phase} passes"):
            out = run_phase(phase)
        stored = ids(out, "# stored: ")
        if stored or acked:
            with subtest(f"every webhook delivery acknowledged before the power cut is stored ({phase})"):
                assert acked, "the phase before the power cut printed no acknowledged id"
                lost = sorted(set(acked) - set(stored))
                assert not lost, f"{len(lost)} of {len(acked)} acknowledged deliveries are not stored: {lost}"
            acked = []
        if crash:
            acked = ids(out, "# acked: ")
            with subtest(f"the machine boots again after a power cut following {phase}"):
                machine.crash()
                machine.start()
                machine.wait_for_unit("multi-user.target")
  '';
}
