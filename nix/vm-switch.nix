# Check `vm-switch`: how a configuration change reaches running instances
# (docs/using.md, "How configuration changes reach running instances"), after the
# nixpkgs test nixos/tests/activation/template-dropin.nix.
#
# The base system has users alice and bob; the specialisation `changed`
# removes alice, adds carol, changes bob's environment and installs a
# second build of agent-box. After `switch-to-configuration switch`:
# carol's units run, alice's are stopped, bob's supervisor is restarted on
# the new build (its drop-in says X-StopIfChanged=false) while his sessions
# unit is not (X-RestartIfChanged=false): his tmux server and agent keep
# their pids and their old environment, and a session started after the
# switch gets the new one.
{ pkgs, module }:

pkgs.testers.runNixOSTest {
  name = "agent-box-vm-switch";

  nodes.machine =
    { lib, options, ... }:
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
        services.agent-box.package = options.services.agent-box.package.default.overrideAttrs (old: {
          ldflags = old.ldflags ++ [ "-X main.version=changed" ];
        });
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


    def environ(pid: str) -> list[str]:
        return machine.succeed(f"tr '\\0' '\\n' < /proc/{pid}/environ").splitlines()


    def agent_pid(server: str) -> str:
        # the pane's process: the tmux server's only child (exec-session
        # execs the agent in place)
        return machine.succeed(f"pgrep -P {server}").strip()


    machine.wait_for_unit("multi-user.target")

    with subtest("the base configuration runs alice's and bob's units only"):
        for u in ["alice", "bob"]:
            machine.wait_for_unit(f"agent-box@{u}.service")
            machine.wait_for_unit(f"agent-box-sessions@{u}.service")
        machine.fail("systemctl is-active agent-box@carol.service")

    with subtest("the sessions unit opts out of restarts on switch, the supervisor in"):
        machine.succeed("systemctl cat agent-box-sessions@bob.service | grep -Fx X-RestartIfChanged=false")
        machine.succeed("systemctl cat agent-box@bob.service | grep -Fx X-StopIfChanged=false")
        machine.fail("systemctl cat agent-box@bob.service | grep -F X-RestartIfChanged")
        machine.wait_until_succeeds("pgrep -P $(systemctl show -P MainPID agent-box-sessions@bob.service)")
        server = main_pid("agent-box-sessions@bob.service")
        agent = agent_pid(server)
        supervisor = main_pid("agent-box@bob.service")
        assert "GREETING=before" in environ(agent), "bob's agent starts with GREETING=before"

    with subtest("switching starts carol, stops alice, restarts bob's supervisor and no agent"):
        machine.succeed(
            "/run/booted-system/specialisation/changed/bin/switch-to-configuration switch"
        )
        machine.wait_for_unit("agent-box@carol.service")
        machine.fail("systemctl is-active agent-box@alice.service")
        machine.fail("systemctl is-active agent-box-sessions@alice.service")
        machine.wait_for_unit("agent-box@bob.service")
        assert main_pid("agent-box@bob.service") != supervisor, "bob's supervisor was not restarted"
        assert main_pid("agent-box-sessions@bob.service") == server, "bob's tmux server was restarted"
        assert agent_pid(server) == agent, "bob's agent was restarted"
        assert "GREETING=before" in environ(agent), "bob's running agent kept its environment"
        machine.succeed("grep -F '\"version\": \"changed\"' /run/agent-box/bob/state.json")

    with subtest("a session started after the switch gets the new environment"):
        machine.succeed(
            "runuser -u bob -- env HOME=/home/bob /etc/profiles/per-user/bob/bin/agent-box session add probe --agent shell"
            " -- -c 'echo \"$GREETING\" > /home/bob/probe; exec sleep infinity'"
        )
        machine.wait_until_succeeds("grep -qx after /home/bob/probe")
        machine.succeed(
            "runuser -u bob -- env HOME=/home/bob /etc/profiles/per-user/bob/bin/agent-box session ls | grep -E '^main .*restart to apply'"
        )
  '';
}
