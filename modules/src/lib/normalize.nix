# The evaluated options (config.services.agent-box under NixOS, or the
# offline stand-in's evaluation of the same declarations) -> n, the values
# the checks, the renderers and the glue use: the one normalisation. Nothing
# here fills defaults or checks values: the module system (options.nix) and
# checks/ do.
{
  prim,
  build,
  formats,
  ...
}:
cfg:
let
  inherit (builtins)
    attrNames
    filter
    listToAttrs
    map
    mapAttrs
    ;
  inherit (prim) concatMap sortStrings unique;

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
          inherit (v) args prompt;
          cwd = if v.workingDirectory == null then "/home/${name}" else v.workingDirectory;
        }
      ) (sortStrings (attrNames u.sessions));
    in
    {
      inherit name sessions;
      # The agents the host named for this user (checked to exist).
      extraAgents = u.agents;
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

  # The web settings, and per user with webhooks the hooks.
  web =
    let
      w = cfg.web;
      d = formats.splitDomain w.domain;
      loginNames = sortStrings (attrNames w.logins);
    in
    {
      inherit (w) enable tls openFirewall;
      domain = w.domain;
      host = if d == null then w.domain else d.host;
      port = if d == null || d.port == null then formats.domainFormat.defaultPort else builtins.fromJSON d.port;
      logins = map (l: {
        name = l;
        inherit (w.logins.${l}) hashedPasswordFile;
        notifyUrlFile = w.logins.${l}.notify.urlFile;
        users = sortStrings (unique w.logins.${l}.users);
      }) loginNames;
      # Agent users with a web origin: those some login may open.
      users = sortStrings (unique (concatMap (l: w.logins.${l}.users) loginNames));
      inherit (w)
        sessionLifetime
        idleTimeout
        terminalCheckInterval
        webhookConcurrency
        ptraceScope
        ;
      # Per agent user with webhooks: the hooks, sorted by name.
      hooks = listToAttrs (
        map (u: {
          name = u;
          value = map (h: { name = h; } // cfg.users.${u}.webhooks.${h}) (
            sortStrings (attrNames cfg.users.${u}.webhooks)
          );
        }) (filter (u: cfg.users.${u}.webhooks != { }) (sortStrings (attrNames cfg.users)))
      );
      fail2ban = {
        enable = w.enable && w.fail2ban.enable;
        inherit (w.fail2ban) maxretry findtime bantime;
      };
    };
in
{
  inherit (cfg)
    defaultAgent
    slice
    agents
    attention
    claude
    codex
    guide
    ;
  inherit web;
  users = mapAttrs user cfg.users;
  userNames = sortStrings (attrNames cfg.users);
}
