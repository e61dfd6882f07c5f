# Codex's system configuration, /etc/codex/config.toml (docs/runtime-contract.md,
# "Codex"), installed when an agent user has an agent with setup = "codex":
# only what is the same for every user of the host. The guide reaches the
# model as developer instructions (beside, never instead of, a user's
# AGENTS.md); the SessionStart hook is how the agent reports the
# conversation it chose (hooks of the system layer run without the trust
# review of a user's hooks; measured with 0.171.0); the update check is
# off (the package is the host's). Strings are JSON strings, which TOML's
# basic strings read alike, with DEL escaped (TOML wants it so).
# runtime: the absolute path of the agent-box program; guide: its text.
_: {
  configFile = "codex/config.toml";

  config =
    runtime: guide:
    let
      str =
        s: builtins.replaceStrings [ (builtins.fromJSON ''"\u007f"'') ] [ "\\u007F" ] (builtins.toJSON s);
    in
    ''
      # Written by agent-box (services.agent-box); Codex's system layer.
      developer_instructions = ${str guide}
      check_for_update_on_startup = false

      [[hooks.SessionStart]]
      [[hooks.SessionStart.hooks]]
      type = "command"
      # Codex runs it under /bin/sh -c: exec makes the hook a child of the
      # agent itself (conversation.CheckReporter).
      command = ${str "exec ${runtime} agent-hook codex session-start"}
    '';
}
