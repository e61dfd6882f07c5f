# The agents' host-wide files (the guide, and the hook or plugin through
# which each reports its conversation), for the setups some user has: path
# under /etc -> text. host: as in units.nix (its runtime).
{ render, guideText, ... }:
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
      files = {
        claude = {
          ${render.claude.settingsFile} = render.claude.settings runtime;
          ${render.claude.guideFile} = guide;
        };
        codex.${render.codex.configFile} = render.codex.config runtime guide;
        opencode = {
          ${render.opencode.configFile} = render.opencode.config;
          ${render.opencode.pluginFile} = render.opencode.plugin runtime;
          ${render.opencode.guideFile} = guide;
        };
      };
    in
    builtins.foldl' (acc: s: acc // (if setupUsed s n then files.${s} else { })) { } (attrNames files);
}
