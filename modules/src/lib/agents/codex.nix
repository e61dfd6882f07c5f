# Codex, the built-in agent `codex`: its profile and its system
# configuration, /etc/codex/config.toml (docs/runtime-contract.md, "Codex");
# what a spawn prepares for it is internal/runtime/agentsetup/codex.go.
#
# The profile: Codex chooses its conversation's id (reported by its
# SessionStart hook at the first turn) and resumes with a subcommand; the
# kickoff prompt is its last argument, after "--". "codex" setup trusts the
# session's folder on the command line of each spawn (measured with
# 0.171.0).
#
# The file, installed when an agent user has an agent with setup = "codex":
# only what is the same for every user of the host. The guide reaches the
# model as developer instructions (beside, never instead of, a user's
# AGENTS.md); the SessionStart hook is how the agent reports the
# conversation it chose, its Stop hook (contract.attention.agentEvents.codex)
# that a turn ended (hooks of the system layer run without the trust
# review of a user's hooks; measured with 0.171.0); the update check is
# off (the package is the host's). Strings are JSON strings, which TOML's
# basic strings read alike, with DEL escaped (TOML wants it so).
{ contract, prim, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
  configFile = "codex/config.toml";

  # runtime: the absolute path of the agent-box program; guide: its text.
  config =
    runtime: guide:
    let
      str =
        s: builtins.replaceStrings [ (builtins.fromJSON ''"\u007f"'') ] [ "\\u007F" ] (builtins.toJSON s);
      # the hook that waits for a person's decision (contract.approvals)
      # ends its own wait before Codex's timeout for it
      waits = e: contract.approvals.agentEvents.codex or null == e;
      hook = event: command: ''

        [[hooks.${event}]]
        [[hooks.${event}.hooks]]
        type = "command"
        command = ${str command}
      ''
      + (if waits event then "timeout = ${toString contract.approvals.hookTimeoutSeconds}\n" else "");
    in
    ''
      # Written by agent-box (services.agent-box); Codex's system layer.
      developer_instructions = ${str guide}
      check_for_update_on_startup = false

      # Codex runs a hook under /bin/sh -c: exec makes it a child of the
      # agent itself (conversation.CheckReporter).
    ''
    + hook "SessionStart" "exec ${runtime} agent-hook codex session-start"
    + builtins.concatStringsSep "" (
      map (e: hook e "exec ${runtime} agent-hook codex event ${e}") (prim.attentionHooks "codex")
    );
in
{
  profile = {
    packageAttr = "codex";
    command = "codex";
    args = [ ];
    resumeArgs = [
      "resume"
      idPlaceholder
    ];
    newArgs = [ ];
    promptArgs = [
      "--"
      promptPlaceholder
    ];
    setup = "codex";
  };

  # runtime: the absolute path of the agent-box program; guide: its text.
  files = runtime: guide: { ${configFile} = config runtime guide; };
}
