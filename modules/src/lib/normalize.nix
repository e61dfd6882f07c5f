# The evaluated options (config.services.agent-box under NixOS, or the
# offline stand-in's evaluation of the same declarations) -> the values the
# renderers and the glue use. Nothing here fills defaults or checks values:
# the module system (options.nix) and assertions.nix do.
{
  prim,
  build,
  web,
  ...
}:
cfg:
let
  inherit (builtins) attrNames map mapAttrs;
  inherit (prim) sortStrings unique;

  user =
    name: u:
    let
      sessions = map (
        s:
        let
          v = u.sessions.${s};
        in
        {
          name = s;
          agent = if v.agent == null then cfg.defaultAgent else v.agent;
          inherit (v) args;
          cwd = if v.workingDirectory == null then "/home/${name}" else v.workingDirectory;
        }
      ) (sortStrings (attrNames u.sessions));
    in
    {
      inherit name sessions;
      inherit (u)
        extraGroups
        environmentFiles
        memoryHigh
        memoryMax
        tasksMax
        cpuWeight
        ;
      home = "/home/${name}";
      # The agents this user's environment holds: the seed's, the default
      # and the extra ones, sorted and unique.
      agentNames = sortStrings (unique (map (s: s.agent) sessions ++ [ cfg.defaultAgent ] ++ u.agents));
      environment = map (k: {
        name = k;
        value = u.environment.${k};
      }) (sortStrings (attrNames u.environment));
      files = build.storeNames name;
    };
in
{
  inherit (cfg) defaultAgent slice agents;
  web = web.normalize cfg;
  users = mapAttrs user cfg.users;
  userNames = sortStrings (attrNames cfg.users);
}
