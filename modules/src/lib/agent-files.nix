# The agents' host-wide files (the guide, and the hook or plugin through
# which each reports its conversation), each agent's from its file in
# agents/, for the setups some user has: path under /etc -> text. host: as
# in units.nix (its runtime).
{ render, guideText, agentDefs, ... }:
let
  inherit (builtins) attrNames;

  # Whether an agent user has an agent with setup s (then the agent's
  # host-wide files are installed).
  setupUsed =
    s: n: builtins.any (u: builtins.any (a: n.agents.${a}.setup == s) n.users.${u}.agentNames) n.userNames;
in
{
  files =
    n: host:
    let
      runtime = "${host.runtime}/bin/agent-box";
      guide = render.guide n guideText;
    in
    builtins.foldl' (
      acc: name:
      let
        a = agentDefs.${name};
      in
      acc // (if a.profile.setup != null && setupUsed a.profile.setup n then a.files runtime guide else { })
    ) { } (attrNames agentDefs);
}
