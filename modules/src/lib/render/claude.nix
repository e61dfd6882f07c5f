# The host-wide managed files of Claude Code (docs/runtime-contract.md,
# "Claude Code"), installed when an agent user has an agent with
# setup = "claude": only what is the same for every user of the host. The
# settings drop-in acknowledges the bypass mode's warning and installs the
# SessionStart hook through which the agent reports its conversation, and
# one hook per event of contract.attention.agentEvents.claude through which
# it reports its attention state (the hooks do nothing outside a supervised
# session); CLAUDE.md is the guide (render.guide).
# runtime: the absolute path of the agent-box program.
{ prim, ... }:
let
  # Claude runs a hook under /bin/sh -c: exec makes it a child of the
  # agent itself (conversation.CheckReporter).
  hook = command: [
    {
      hooks = [
        {
          type = "command";
          inherit command;
        }
      ];
    }
  ];
in
{
  settingsFile = "claude-code/managed-settings.d/50-agent-box.json";
  guideFile = "claude-code/CLAUDE.md";

  settings =
    runtime:
    builtins.toJSON {
      skipDangerousModePermissionPrompt = true;
      hooks =
        builtins.listToAttrs (
          map (e: {
            name = e;
            value = hook "exec ${runtime} agent-hook claude event ${e}";
          }) (prim.attentionHooks "claude")
        )
        // {
          SessionStart = hook "exec ${runtime} agent-hook claude session-start";
        };
    }
    + "\n";
}
