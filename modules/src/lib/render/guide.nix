# The guide for agents (modules/src/lib/guide.md, the text given here) as
# every agent reads it: its @hooksDir@ and @session@ are the contract's
# variables; the URL pattern of the user's origin and the host's own text
# (services.agent-box.guide.extraText) follow. Claude Code reads it as its
# managed CLAUDE.md, Codex as developer_instructions.
{ contract, ... }:
n: text:
builtins.replaceStrings
  [ "@hooksDir@" "@session@" ]
  [ contract.env.hooksDir.name contract.env.session.name ]
  text
+ (
  if n.web.enable then
    "- The person reaches your session at `https://<your user name>.${n.web.domain}/`\n  (your user name: `id -un`).\n"
  else
    ""
)
+ (if n.guide.extraText == "" then "" else "\n## From this host\n\n" + n.guide.extraText)
