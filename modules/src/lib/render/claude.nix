# The host-wide managed files of Claude Code (docs/runtime-contract.md,
# "Claude Code"), installed when an agent user has an agent with
# setup = "claude": only what is the same for every user of the host. The
# settings drop-in acknowledges the bypass mode's warning and installs the
# SessionStart hook through which the agent reports its conversation (the
# hook does nothing outside a supervised session); CLAUDE.md is the guide
# (render.guide).
# runtime: the absolute path of the agent-box program.
{ contract, ... }:
{
  settingsFile = "claude-code/managed-settings.d/50-agent-box.json";
  guideFile = "claude-code/CLAUDE.md";

  settings =
    runtime:
    builtins.toJSON {
      skipDangerousModePermissionPrompt = true;
      hooks.SessionStart = [
        {
          hooks = [
            {
              type = "command";
              # Claude runs it under /bin/sh -c: exec makes the hook a
              # child of the agent itself (conversation.CheckReporter).
              command = "exec ${runtime} agent-hook claude session-start";
            }
          ];
        }
      ];
    }
    + "\n";
}
