# Check `vm-switch`: how a configuration change reaches running instances
# (README, "How configuration changes reach running instances"), after the
# nixpkgs test nixos/tests/activation/template-dropin.nix.
#
# The base system has users alice and bob; the specialisation `changed`
# removes alice, adds carol and changes bob's environment. After
# `switch-to-configuration switch`: carol's instance runs, alice's is
# stopped, and bob's keeps running untouched (same MainPID, old environment)
# because his drop-in says X-RestartIfChanged=false; his new environment
# applies at his next start.
{ pkgs, module }:

pkgs.testers.runNixOSTest {
  name = "agent-box-vm-switch";

  nodes.machine =
    { lib, ... }:
    {
      imports = [ module ];
      services.agent-box = {
        enable = true;
        users.alice.sessions.main = { };
        users.bob = {
          sessions.main = { };
          environment.GREETING = "before";
        };
      };
      # mkForce replaces the base definition of `users` as a whole, so alice
      # is really gone in the specialisation.
      specialisation.changed.configuration = {
        services.agent-box.users = lib.mkForce {
          bob = {
            sessions.main = { };
            environment.GREETING = "after";
          };
          carol.sessions.main = { };
        };
      };
    };

  testScript = ''
    def main_pid(unit: str) -> str:
        pid = machine.succeed(f"systemctl show -P MainPID {unit}").strip()
        assert pid not in ("", "0"), f"{unit} has no main process"
        return pid


    def environ(pid: str) -> str:
        return machine.succeed(f"tr '\\0' '\\n' < /proc/{pid}/environ")


    machine.wait_for_unit("multi-user.target")

    with subtest("the base configuration runs alice's and bob's instances only"):
        machine.wait_for_unit("agent-box@alice.service")
        machine.wait_for_unit("agent-box@bob.service")
        machine.fail("systemctl is-active agent-box@carol.service")

    with subtest("bob's drop-in opts out of restarts on switch"):
        machine.succeed(
            "systemctl cat agent-box@bob.service | grep -Fx X-RestartIfChanged=false"
        )
        bob_pid = main_pid("agent-box@bob.service")
        assert "GREETING=before" in environ(bob_pid).splitlines(), "bob starts with GREETING=before"

    with subtest("switching starts carol, stops alice and leaves bob running"):
        machine.succeed(
            "/run/booted-system/specialisation/changed/bin/switch-to-configuration switch"
        )
        machine.wait_for_unit("agent-box@carol.service")
        machine.fail("systemctl is-active agent-box@alice.service")
        machine.succeed("systemctl is-active agent-box@bob.service")
        assert main_pid("agent-box@bob.service") == bob_pid, "bob's instance was restarted by the switch"
        assert "GREETING=before" in environ(bob_pid).splitlines(), "bob's running instance kept its environment"

    with subtest("bob's new environment applies at his next start"):
        machine.succeed("systemctl show -P Environment agent-box@bob.service | grep -F GREETING=after")
        machine.succeed("systemctl restart agent-box@bob.service")
        machine.wait_for_unit("agent-box@bob.service")
        new_pid = main_pid("agent-box@bob.service")
        assert new_pid != bob_pid, "systemctl restart did not restart bob's instance"
        assert "GREETING=after" in environ(new_pid).splitlines(), "bob's restarted instance has GREETING=after"
  '';
}
