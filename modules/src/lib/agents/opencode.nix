# OpenCode, the built-in agent `opencode`: its profile and its managed
# files (docs/runtime-contract.md, "OpenCode"); what a spawn prepares for
# it is internal/runtime/agentsetup/opencode.go.
#
# The profile: OpenCode chooses its session's id (reported by agent-box's
# plugin in its managed config when the session is created) and resumes it
# with --session; the kickoff prompt is one "--prompt=..." argument (so a
# prompt starting with "-" is not an option). "opencode" setup turns off
# its network fetches for each spawn and resumes only while its database
# holds the session (measured with 1.18.33).
#
# The files, installed when an agent user has an agent with setup =
# "opencode": only what is the
# same for every user of the host. /etc/opencode/opencode.json is OpenCode's
# managed configuration (the highest precedence; measured with 1.18.33): the
# guide as an instructions file (beside, never instead of, a user's
# AGENTS.md), agent-box's plugin, no update and no sharing. The plugin runs
# inside OpenCode: when a top-level session is created it runs
# `agent-box agent-hook opencode session-start` (no shell; its parent is the
# agent itself, conversation.CheckReporter) with the session's id and the
# database OpenCode has open (read from /proc/self/fd: OPENCODE_DB and the
# release channel change its name); on the events of
# contract.attention.agentEvents.opencode of that session (not of a
# subagent's) it runs `agent-box agent-hook opencode event TYPE` with the
# event's status (a retry's with its time, `next`: a long one is the usage
# limit, agentsetup/opencode.go) or an error's HTTP status; the session.idle
# that follows a session.error (measured: OpenCode ends a failed turn with
# both) is not a finished turn, and a person's abort is no error. A
# resumed session's prompt (the resume prompt after a usage limit) comes in
# contract.env.agentPrompt; the plugin sends it through OpenCode's client.
# A permission request's hook waits for a person's decision, which the
# plugin replies to OpenCode (docs/web-contract.md, "Approvals").
# Outside a supervised session it does nothing.
{ contract, prim, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
  pluginFile = "opencode/agent-box.js";
  guideFile = "opencode/AGENTS.md";
  configFile = "opencode/opencode.json";
  # the plugin's report of a session.error: OpenCode's HTTP status in it
  errorField = contract.attention.agentEvents.opencode.detailFields."session.error";
  # a resumed session's prompt, from exec-session
  promptVar = contract.env.agentPrompt.name;
  # the event whose hook waits for a person's decision
  askEvent = contract.approvals.agentEvents.opencode;

  config = builtins.toJSON {
    autoupdate = false;
    share = "disabled";
    instructions = [ "/etc/${guideFile}" ];
    plugin = [ "file:///etc/${pluginFile}" ];
  };

  # The plugin's source, opencode-plugin.js; the module fills in its one
  # placeholder. runtime: the absolute path of the agent-box program.
  pluginSource =
    @@include:opencode-plugin.js@@
    ;
  plugin =
    runtime:
    builtins.replaceStrings
      [ "@SETTINGS@" ]
      [
        (builtins.toJSON {
          inherit runtime errorField promptVar askEvent;
          attention = prim.attentionHooks "opencode";
          sessionVar = contract.env.session.name;
        })
      ]
      pluginSource;
in
{
  profile = {
    packageAttr = "opencode";
    command = "opencode";
    args = [ ];
    resumeArgs = [ "--session=${idPlaceholder}" ];
    newArgs = [ ];
    promptArgs = [ "--prompt=${promptPlaceholder}" ];
    setup = "opencode";
  };

  # runtime: the absolute path of the agent-box program; guide: its text.
  files = runtime: guide: {
    ${configFile} = config;
    ${pluginFile} = plugin runtime;
    ${guideFile} = guide;
  };
}
