# The guide for agents (modules/src/lib/guide.md, the text given here) as
# every agent reads it: its @hooksDir@, @session@ and @port@ are the
# contract's variables, @appDir@ and @appUnit@ its app directory and unit
# (for any app "<name>" of the reader, "$USER"); the URL pattern of the user's origin and the host's own text
# (services.agent-box.guide.extraText) follow. Claude Code reads it as its
# managed CLAUDE.md, Codex as developer_instructions.
{ contract, ... }:
n: text:
let
  forApp = builtins.replaceStrings [ "<app>" "<user>" ] [ "<name>" "$USER" ];
in
builtins.replaceStrings
  [ "@hooksDir@" "@session@" "@port@" "@appDir@" "@appUnit@" ]
  [
    contract.env.hooksDir.name
    contract.env.session.name
    contract.apps.portVariable
    (forApp contract.apps.dir)
    (forApp (builtins.replaceStrings [ ".service" "<label>" ] [ "" contract.apps.label ] contract.apps.unit))
  ]
  text
+ (
  if n.web.enable then
    "- The person reaches your session at `https://<your user name>.${n.web.domain}/`\n  (your user name: `id -un`).\n"
  else
    ""
)
+ (if n.guide.extraText == "" then "" else "\n## From this host\n\n" + n.guide.extraText)
