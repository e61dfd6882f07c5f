# The evaluated options (config.services.agent-box under NixOS, or the
# offline stand-in's evaluation of the same declarations) -> n, the values
# the checks, the renderers and the glue use: the one normalisation. Nothing
# here fills defaults or checks values: the module system (options.nix) and
# checks/ do.
{
  prim,
  build,
  formats,
  contract,
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

  # The default waitFor of a command: its first relative path (the
  # program, if it holds a '/', else the first argument that looks like a
  # file: no leading '/' or '-', no space, a '/' or a '.' in it); null when
  # it has none.
  firstRelative =
    command:
    let
      relative =
        s:
        s != ""
        && builtins.substring 0 1 s != "/"
        && builtins.substring 0 1 s != "-"
        && builtins.match "[^[:space:]]*" s != null;
      program = builtins.head command;
      args = builtins.tail command;
      candidates =
        (if command != [ ] && relative program && prim.contains "/" program then [ program ] else [ ])
        ++ filter (a: relative a && (prim.contains "/" a || prim.contains "." a)) (
          if command == [ ] then [ ] else args
        );
    in
    if candidates == [ ] then null else builtins.head candidates;

  # An app of user name: its label (unit instance, origin), unit, socket,
  # directory, the absolute file it waits for (null: none), state
  # directory and the rest of its options.
  app =
    name: appName: a:
    let
      forApp = t: builtins.replaceStrings [ "<label>" "<app>" "<user>" ] [ label appName name ] t;
      label = builtins.replaceStrings [ "<app>" "<user>" ] [ appName name ] contract.apps.label;
      dir = forApp contract.apps.dir;
      wait = if a.waitFor == null then firstRelative a.command else a.waitFor;
    in
    {
      name = appName;
      user = name;
      inherit label dir;
      unit = forApp contract.apps.unit;
      socketUnit = forApp contract.apps.socket.unit;
      socket = forApp contract.apps.socket.path;
      stateDirectory = forApp contract.apps.stateDirectory;
      waitFor =
        if wait == null then
          null
        else if builtins.substring 0 1 wait == "/" then
          wait
        else
          "${dir}/${if builtins.substring 0 2 wait == "./" then builtins.substring 2 (-1) wait else wait}";
      environment = map (k: {
        name = k;
        value = a.environment.${k};
      }) (sortStrings (attrNames a.environment));
      inherit (a)
        command
        packages
        environmentFiles
        memoryMax
        tasksMax
        restartDelay
        restartDelayMax
        public
        ;
      files = build.appStoreName label;
    };

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
        diskQuota
        ;
      home = "/home/${name}";
      apps = map (a: app name a u.apps.${a}) (sortStrings (attrNames u.apps));
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
      users = sortStrings (unique (concatMap (l: w.logins.${l}.users) loginNames));
      appsDomain = if w.appsDomain == null then w.domain else w.appsDomain;
    in
    {
      inherit (w) enable tls openFirewall domain;
      # The apps' domain (the box's unless set), and whether it was set.
      inherit appsDomain;
      appsDomainSet = w.appsDomain != null;
      # The apps of the users with a web origin, each with its origin's
      # host[:port].
      apps = map (a: a // { host = "${a.label}.${appsDomain}"; }) (
        concatMap (u: (user u cfg.users.${u}).apps) (filter (u: cfg.users ? ${u}) users)
      );
      host = if d == null then w.domain else d.host;
      port = if d == null || d.port == null then formats.domainFormat.defaultPort else builtins.fromJSON d.port;
      logins = map (l: {
        name = l;
        inherit (w.logins.${l}) hashedPasswordFile;
        notifyUrlFile = w.logins.${l}.notify.urlFile;
        notifyActions = w.logins.${l}.notify.actions;
        users = sortStrings (unique w.logins.${l}.users);
      }) loginNames;
      # Agent users with a web origin: those some login may open.
      inherit users;
      inherit (w)
        sessionLifetime
        idleTimeout
        approvals
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
    usageLimits
    claude
    codex
    guide
    ;
  inherit web;
  users = mapAttrs user cfg.users;
  userNames = sortStrings (attrNames cfg.users);
  # Every user's apps (the app units are installed only with some).
  apps = concatMap (name: (user name cfg.users.${name}).apps) (sortStrings (attrNames cfg.users));
}
