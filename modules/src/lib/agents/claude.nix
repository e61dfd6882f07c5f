# Claude Code, the built-in agent `claude`: its profile and its host-wide
# managed files (docs/runtime-contract.md, "Claude Code"); what a spawn
# prepares for it is internal/runtime/agentsetup/claude.go.
#
# The profile: Claude Code resumes a conversation by id, takes a new one's
# id up front and the kickoff prompt as its last argument (after "--", so a
# prompt starting with "-" is not an option); "claude" setup merges
# ~/.claude.json before each spawn (measured with 2.1.328).
#
# The files, installed when an agent user has an agent with
# setup = "claude": only what is the same for every user of the host. The
# settings drop-in acknowledges the bypass mode's warning and installs the
# SessionStart hook through which the agent reports its conversation, and
# one hook per event of contract.attention.agentEvents.claude through which
# it reports its attention state (the hooks do nothing outside a supervised
# session); CLAUDE.md is the guide (render.guide).
{ contract, prim, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
  # Claude runs a hook under /bin/sh -c: exec makes it a child of the
  # agent itself (conversation.CheckReporter).
  hook = command: hookWith command { };
  hookWith = command: extra: [
    {
      hooks = [
        (
          {
            type = "command";
            inherit command;
          }
          // extra
        )
      ];
    }
  ];
  # The hook that waits for a person's decision (contract.approvals) ends
  # its own wait before Claude's timeout for it.
  waits = e: contract.approvals.agentEvents.claude or null == e;
  settingsFile = "claude-code/managed-settings.d/50-agent-box.json";
  guideFile = "claude-code/CLAUDE.md";

  # runtime: the absolute path of the agent-box program.
  settings =
    runtime:
    builtins.toJSON {
      skipDangerousModePermissionPrompt = true;
      hooks =
        builtins.listToAttrs (
          map (e: {
            name = e;
            value = hookWith "exec ${runtime} agent-hook claude event ${e}" (
              if waits e then { timeout = contract.approvals.hookTimeoutSeconds; } else { }
            );
          }) (prim.attentionHooks "claude")
        )
        // {
          SessionStart = hook "exec ${runtime} agent-hook claude session-start";
        };
    }
    + "\n";
in
{
  profile = {
    packageAttr = "claude-code";
    command = "claude";
    args = [ ];
    resumeArgs = [
      "--resume"
      idPlaceholder
    ];
    newArgs = [
      "--session-id"
      idPlaceholder
    ];
    promptArgs = [
      "--"
      promptPlaceholder
    ];
    setup = "claude";
  };

  # runtime: the absolute path of the agent-box program; guide: its text.
  files = runtime: guide: {
    ${settingsFile} = settings runtime;
    ${guideFile} = guide;
  };
}
