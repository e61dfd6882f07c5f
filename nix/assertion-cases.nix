# The configurations the `assertions` check evaluates, with the exact
# messages that must fail and nothing else. internal/flakecheck checks the
# expectations offline against the module's own lib (its failures, and
# homeMessage for the check the glue evaluates), so the check cannot drift
# from the module.
{ mkForce }:

[
  {
    name = "environment cannot set PATH";
    config.services.agent-box.users.alice.environment.PATH = "/bin";
    expected = [
      "services.agent-box.users.\"alice\".environment.\"PATH\": PATH, HOME, USER and AGENT_BOX_* are set by agent-box; add programs with services.agent-box.extraPackages instead of PATH."
    ];
  }
  {
    name = "a session names an unknown agent";
    config.services.agent-box.users.alice.sessions.s.agent = "nope";
    expected = [
      "services.agent-box.users.\"alice\".sessions.\"s\".agent = \"nope\": no such agent; define services.agent-box.agents.\"nope\" or use one of [\"claude\",\"codex\",\"opencode\",\"shell\"]."
    ];
  }
  {
    name = "an undefined default agent";
    config.services.agent-box = {
      defaultAgent = "x";
      users.alice = { };
    };
    expected = [
      "services.agent-box.defaultAgent = \"x\": no such agent; use one of [\"claude\",\"codex\",\"opencode\",\"shell\"]."
    ];
  }
  {
    # The module sets users.users.alice.home at normal priority, so a host
    # can only override it with mkForce (two plain definitions conflict
    # before any assertion runs). The assertion then names the fix.
    name = "the home of an agent user is moved";
    config = {
      services.agent-box.users.alice = { };
      users.users.alice.home = mkForce "/srv/alice";
    };
    expected = [
      "services.agent-box.users.alice: users.users.alice.home is /srv/alice, but agent-box@.service uses /home/alice; remove the home override."
    ];
  }
  {
    name = "an agent user in Caddy's group";
    config.services.agent-box = {
      users.alice.extraGroups = [ "caddy" ];
      web = {
        enable = true;
        domain = "box.example.com";
        logins.ops = {
          hashedPasswordFile = "/var/lib/secrets/ops.hash";
          users = [ "alice" ];
        };
      };
    };
    expected = [
      "services.agent-box.users.\"alice\".extraGroups contains \"caddy\", Caddy's group: that user could connect to every socket Caddy may dial (every user's web daemon, the auth service). Remove it."
    ];
  }
  {
    name = "a login opens an undefined agent user";
    config.services.agent-box = {
      users.alice = { };
      web = {
        enable = true;
        domain = "box.example.com";
        logins.ops = {
          hashedPasswordFile = "/var/lib/secrets/ops.hash";
          users = [
            "alice"
            "zed"
          ];
        };
      };
    };
    expected = [
      "services.agent-box.web.logins names the agent user \"zed\", which services.agent-box.users does not define."
    ];
  }
]
