# The web surface (docs/web-contract.md), builtins only: the normalized
# settings, their checks, and the bytes of every file it installs: the auth
# service's configuration and drop-ins, the per-user web daemon and ttyd
# drop-ins, the socket drop-ins, and Caddy's global options and sites.
{
  prim,
  systemd,
  build,
  contract,
  ...
}:
let
  inherit (builtins)
    attrNames
    concatStringsSep
    elem
    filter
    head
    length
    listToAttrs
    map
    match
    toJSON
    ;
  inherit (prim)
    concatMap
    forUser
    hasPrefix
    nameRe
    show
    sortStrings
    unique
    ;
  vars = contract.env;
  inherit (contract)
    headers
    names
    routes
    sockets
    units
    ;
  hookLimits = contract.webhooks;
  creds = contract.credentials;

  prefix = "services.agent-box.web";

  # "host[:port]" -> { host; port; } (port null when absent).
  splitDomain =
    d:
    let
      m = match "([a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:([0-9]{1,5}))?" d;
    in
    if m == null then
      null
    else
      {
        host = head m;
        port = builtins.elemAt m 3;
      };

  # cfg: config.services.agent-box (evaluated) -> the web settings.
  normalize =
    cfg:
    let
      w = cfg.web;
      d = splitDomain w.domain;
      loginNames = sortStrings (attrNames w.logins);
    in
    {
      inherit (w) enable tls openFirewall;
      domain = w.domain;
      host = if d == null then w.domain else d.host;
      port = if d == null || d.port == null then domainFormat.defaultPort else builtins.fromJSON d.port;
      logins = map (l: {
        name = l;
        inherit (w.logins.${l}) hashedPasswordFile;
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

  durationRe = contract.formats.duration.pattern;
  domainFormat = contract.formats.domain;
  # The domain as the runtime checks it (contract.CheckDomain).
  validDomain =
    d:
    let
      s = splitDomain d;
    in
    match domainFormat.pattern d != null
    && builtins.stringLength s.host <= domainFormat.maxHostLength
    && (
      s.port == null
      || (
        let
          p = builtins.fromJSON s.port;
        in
        p <= domainFormat.maxPort && p != domainFormat.defaultPort
      )
    );
  # A duration setting of at least min (a Go duration).
  atLeast =
    min: d:
    let
      s = durationSeconds d;
    in
    s != null && s >= durationSeconds min;

  # A duration durationRe accepts, up to the format's max -> its seconds (a
  # float or an int); null for anything else.
  durationSeconds =
    d:
    let
      s = rawSeconds d;
    in
    if s == null || s > rawSeconds contract.formats.duration.max then null else s;
  rawSeconds =
    d:
    let
      unit = {
        h = 3600;
        m = 60;
        s = 1;
        ms = 1.0e-3;
      };
    in
    if match durationRe d == null then
      null
    else
      builtins.foldl' (acc: c: acc + number (head c) (builtins.elemAt c 1) * unit.${builtins.elemAt c 2}) 0 (
        filter builtins.isList (builtins.split "0*([0-9]+)(\\.[0-9]+)?(ms|h|m|s)" d)
      );
  # "5" ".25" -> 5.25 (JSON numbers have no leading zeros: those are gone).
  number = int: frac: builtins.fromJSON (int + (if frac == null then "" else frac));
  # fail2ban's times: seconds, or counts with s, m, h, d, w.
  banTimeRe = "[0-9]+|([0-9]+(s|m|h|d|w))+";

  # A root-only file systemd hands over as a credential: absolute, outside
  # the world-readable store, and without what LoadCredential= cannot hold.
  secretPath = p: hasPrefix "/" p && !hasPrefix "/nix/store/" p && match ".*[\n\r:].*" p == null;

  # The smallest quota that holds one delivery of a hook's largest size.
  minQuota = h: 2 * h.maxBodySize + hookLimits.quotaSlack;

  # Checks of the webhooks (with or without the web surface).
  hookAssertions =
    w:
    concatMap (
      u:
      let
        where = "services.agent-box.users.${show u}.webhooks";
      in
      [
        {
          assertion = w.enable && elem u w.users;
          message = "${where}: webhooks are served by the web surface, on the box origin: set services.agent-box.web.enable = true and name ${show u} in the users of a login under ${prefix}.logins.";
        }
      ]
      ++ concatMap (h: [
        {
          assertion = match names.hook.pattern h.name != null;
          message = "${where}.${show h.name}: hook names must match ${names.hook.pattern} (the name is the URL's last element).";
        }
        {
          assertion = secretPath h.secretFile;
          message = "${where}.${show h.name}.secretFile = ${show h.secretFile}: use an absolute path outside the Nix store (a root-only file; the store is world-readable), without ':'.";
        }
        {
          assertion = match nameRe h.session != null;
          message = "${where}.${show h.name}.session = ${show h.session}: session names must match ${nameRe}.";
        }
        {
          assertion =
            h.notify == null
            || (builtins.stringLength h.notify <= hookLimits.notifyMaxBytes && match ".*[[:cntrl:]].*" h.notify == null);
          message = "${where}.${show h.name}.notify: use text of at most ${toString hookLimits.notifyMaxBytes} bytes, without newlines or other control characters (Enter is pressed after it).";
        }
        {
          assertion = h.maxBodySize >= hookLimits.maxBodySize.min && h.maxBodySize <= hookLimits.maxBodySize.max;
          message = "${where}.${show h.name}.maxBodySize = ${toString h.maxBodySize}: use ${toString hookLimits.maxBodySize.min} to ${toString hookLimits.maxBodySize.max} bytes.";
        }
        {
          assertion = h.quota >= minQuota h;
          message = "${where}.${show h.name}.quota = ${toString h.quota}: use at least ${toString (minQuota h)} (twice maxBodySize, and ${toString hookLimits.quotaSlack} bytes), or a delivery of the largest size might not fit.";
        }
        {
          assertion =
            let
              secs = durationSeconds h.retention;
            in
            secs != null && secs >= durationSeconds hookLimits.retentionMin;
          message = "${where}.${show h.name}.retention = ${show h.retention}: use a Go duration of at least ${hookLimits.retentionMin}, such as \"168h\".";
        }
      ]) w.hooks.${u}
    ) (attrNames w.hooks)
    ++ (
      if w.hooks != { } then
        [
          {
            assertion =
              w.webhookConcurrency >= hookLimits.concurrency.min && w.webhookConcurrency <= hookLimits.concurrency.max;
            message = "${prefix}.webhookConcurrency = ${toString w.webhookConcurrency}: use ${toString hookLimits.concurrency.min} to ${toString hookLimits.concurrency.max}.";
          }
        ]
      else
        [ ]
    );

  # Checks of the web settings and the webhooks; caddyGroup is
  # services.caddy.group, n the normalized options.
  assertions =
    cfg: n: caddyGroup:
    hookAssertions (normalize cfg) ++ webAssertions cfg n caddyGroup;

  webAssertions =
    cfg: n: caddyGroup:
    let
      w = normalize cfg;
    in
    if !w.enable then
      [ ]
    else
      [
        {
          assertion = validDomain cfg.web.domain;
          message = "${prefix}.domain = ${show cfg.web.domain}: use ${domainFormat.what} (for example \"box.example.com\" or \"box.localhost:8443\").";
        }
        {
          assertion = w.logins != [ ];
          message = "${prefix}.logins is empty: define at least one login (a person) with the agent users it may open.";
        }
        {
          assertion = atLeast contract.web.sessionLifetime.min w.sessionLifetime;
          message = "${prefix}.sessionLifetime = ${show w.sessionLifetime}: use a Go duration of at least ${contract.web.sessionLifetime.min}, such as \"168h\".";
        }
        {
          assertion = atLeast contract.web.idleTimeout.min w.idleTimeout;
          message = "${prefix}.idleTimeout = ${show w.idleTimeout}: use a Go duration of at least ${contract.web.idleTimeout.min}, such as \"24h\".";
        }
        {
          assertion =
            let
              s = durationSeconds w.terminalCheckInterval;
            in
            s != null && s >= durationSeconds checkInterval.min && s <= durationSeconds checkInterval.max;
          message = "${prefix}.terminalCheckInterval = ${show w.terminalCheckInterval}: use a Go duration from ${checkInterval.min} to ${checkInterval.max}, such as ${show checkInterval.default}.";
        }
        {
          assertion = w.ptraceScope == null || (w.ptraceScope >= 1 && w.ptraceScope <= 3);
          message = "${prefix}.ptraceScope = ${toString w.ptraceScope}: use 1, 2 or 3 (or null to leave kernel.yama.ptrace_scope to the host). At 0 an agent can attach to its own ttyd and web daemon and serve its page in the operator's terminal.";
        }
      ]
      ++ (
        if w.fail2ban.enable then
          [
            {
              assertion = w.fail2ban.maxretry >= 1;
              message = "${prefix}.fail2ban.maxretry = ${toString w.fail2ban.maxretry}: use 1 or more (failed logins that ban an address).";
            }
          ]
          ++ map (o: {
            assertion = match banTimeRe w.fail2ban.${o} != null;
            message = "${prefix}.fail2ban.${o} = ${show w.fail2ban.${o}}: use a fail2ban time such as \"10m\", \"1h\" or \"1d\" (a number with s, m, h, d or w; plain seconds).";
          }) [ "findtime" "bantime" ]
        else
          [ ]
      )
      ++ concatMap (l: [
        {
          assertion = match names.login.pattern l.name != null;
          message = "${prefix}.logins.${show l.name}: login names must match ${names.login.pattern}.";
        }
        {
          assertion = secretPath l.hashedPasswordFile;
          message = "${prefix}.logins.${show l.name}.hashedPasswordFile = ${show l.hashedPasswordFile}: use an absolute path outside the Nix store (a root-only file; the store is world-readable), without ':'.";
        }
        {
          assertion = l.users != [ ];
          message = "${prefix}.logins.${show l.name}.users is empty: name the agent users this login may open.";
        }
      ]) w.logins
      ++ concatMap (u: [
        {
          assertion = n.users ? ${u};
          message = "${prefix}.logins names the agent user ${show u}, which services.agent-box.users does not define.";
        }
        {
          assertion = match names.webUser.pattern u != null;
          message = "${prefix}.logins opens the agent user ${show u}, whose name cannot be a host name label (its origin is ${u}.${cfg.web.domain}): start with a letter, then lowercase letters, digits and inner '-' (at most 32).";
        }
      ]) w.users
      ++ map (u: {
        assertion = !elem caddyGroup n.users.${u}.extraGroups;
        message = "services.agent-box.users.${show u}.extraGroups contains ${show caddyGroup}, Caddy's group: that user could connect to every socket Caddy may dial (every user's web daemon, the auth service). Remove it.";
      }) (filter (u: n.users ? ${u}) (attrNames n.users));

  origin = w: u: "${u}.${w.domain}";

  # The auth service's configuration (AGENT_BOX_AUTH_CONFIG).
  authConfig =
    w:
    toJSON {
      inherit (w) domain users sessionLifetime idleTimeout;
      logins = listToAttrs (
        map (l: {
          inherit (l) name;
          value.users = l.users;
        }) w.logins
      );
    }
    + "\n";

  env = systemd.environmentLine;

  # agent-box-auth.service.d/overrides.conf. paths: { authEnv; authConfig; }.
  authDropin =
    w: paths:
    ''
      # Generated by the agent-box NixOS module for ${units.auth}.
      [Service]
      ExecStart=
      ExecStart=${paths.authEnv}/bin/agent-box auth serve
    ''
    + env vars.authConfig.name paths.authConfig
    + concatStringsSep "" (
      map (l: systemd.line "LoadCredential" "${creds.loginPrefix}${l.name}:${l.hashedPasswordFile}") w.logins
    );

  # The socket drop-in that gives Caddy's group access.
  socketDropin = unit: caddyGroup: ''
    # Generated by the agent-box NixOS module for ${unit}: Caddy's group may connect.
    [Socket]
    SocketGroup=${caddyGroup}
  '';

  # agent-box-web@<user>.service.d/overrides.conf. With webhooks: the hook
  # listener, the hooks' configuration, one credential per hook's secret,
  # and ordering after the supervisor (which creates the hooks folder).
  webDropin =
    w: u: paths: hooksConfig:
    let
      hs = w.hooks.${u.name} or [ ];
    in
    ''
      # Generated by the agent-box NixOS module for ${forUser units.web u.name}.
      [Service]
      ExecStart=
      ExecStart=${paths.env}/bin/agent-box web serve
    ''
    + env "PATH" "${paths.env}/bin"
    + env vars.agents.name paths.agents
    + env vars.tmux.name "${paths.env}/bin/tmux"
    + env vars.ttyd.name "${paths.env}/bin/ttyd"
    + env vars.webDomain.name w.domain
    + env vars.webCheckInterval.name w.terminalCheckInterval
    + (
      if hs == [ ] then
        ""
      else
        env vars.hooks.name hooksConfig
        + systemd.line "Sockets" "${forUser sockets.web.unit u.name} ${forUser sockets.hook.unit u.name}"
        + concatStringsSep "" (
          map (h: systemd.line "LoadCredential" "${creds.hookPrefix}${h.name}:${h.secretFile}") hs
        )
        + ''

          [Unit]
          Requires=${forUser sockets.hook.unit u.name}
          After=${forUser sockets.hook.unit u.name} ${forUser units.supervisor u.name}
        ''
    );

  # The hooks' configuration of user u (AGENT_BOX_HOOKS; no secret in it).
  hooksConfig =
    w: u:
    toJSON {
      concurrency = w.webhookConcurrency;
      hooks = listToAttrs (
        map (h: {
          inherit (h) name;
          value = {
            inherit (h) session notify maxBodySize quota retention;
          };
        }) w.hooks.${u}
      );
    }
    + "\n";

  hooksName = u: "agent-box-hooks-${u}.json";

  # What Caddy lets through to a user's hook listener: the largest body of
  # the user's hooks and room for the daemon's own 413.
  hookBodyCap = hs: 65536 + builtins.foldl' (m: h: if h.maxBodySize > m then h.maxBodySize else m) 0 hs;

  # agent-box-term@<user>.service.d/overrides.conf: ttyd on the user's
  # private socket, writable, origin-checked, one URL argument (the session
  # name the web daemon validated) for `agent-box session attach --sealed`
  # (a tmux client that can start no program in this unit).
  termDropin =
    u: paths:
    ''
      # Generated by the agent-box NixOS module for ${forUser units.term u.name}.
      [Service]
      ExecStart=
    ''
    + systemd.line "ExecStart" "${paths.env}/bin/ttyd -i ${sock "ttyd" u.name} -W -O -a -b ${routes.terminal.path} -P 30 -t disableLeaveAlert=true ${paths.env}/bin/agent-box session attach --sealed"
    + env "PATH" "${paths.env}/bin"
    + env vars.tmux.name "${paths.env}/bin/tmux";

  securityHeaders = tls: ''
    	header {
    		Cache-Control "no-store"
    		X-Content-Type-Options "nosniff"
    		Referrer-Policy "no-referrer"
    ${if tls == "acme" then "\t\tStrict-Transport-Security \"max-age=31536000\"\n" else ""}	}
  '';

  tlsLine = tls: if tls == "internal" then "\ttls internal\n" else "";

  # Caddy passes on only the box's own cookies (contract: the session
  # cookie, and on a user origin's /auth/* that user's hand-over binding
  # cookie): each "name=value" pair becomes ";" plus the pair if it is one
  # of names, so a script on some origin of the box that fills the browser
  # with parent-domain cookies cannot push a request past a backend's
  # header limit. Never an empty replacement: Caddy would take the line
  # for a set.
  cookies = contract.cookies;
  # How often web daemons check open terminals' sessions: its default and
  # bounds (contract).
  checkInterval = contract.web.terminalCheckInterval;
  keepCookies =
    cookieNames:
    let
      checked = map (
        n: if match "[A-Za-z0-9_-]+" n != null then n else throw "agent-box: cookie name ${show n} needs regexp escaping"
      ) cookieNames;
      groups = concatStringsSep "" (map (n: "(${n}=[^;]*)|") checked);
      refs = concatStringsSep "" (builtins.genList (i: "$" + toString (i + 1)) (length cookieNames));
    in
    "header_up Cookie \"(?:^|;) *(?:${groups}[^;]*)\" \";${refs}\"";

  toPages = cookieNames: ''
    	reverse_proxy unix/${sockets.authPages.path} {
    		${keepCookies cookieNames}
    		header_up ${headers.client} {remote_host}
    	}
  '';

  # Every line of text (ending in a newline) with p in front.
  prefixLines =
    p: text:
    concatStringsSep "" (
      map (l: if l == "" then "" else p + l + "\n") (filter builtins.isString (builtins.split "\n" text))
    );

  # Caddy's global options for the web surface (imported inside the global
  # block of the Caddyfile).
  caddyGlobal =
    w:
    ''
      # Generated by the agent-box NixOS module: Caddy's global options for the web surface.
      admin unix/${sockets.caddyAdmin.path}
      grace_period 10s
      servers {
      	protocols h1 h2
      }
    ''
    + (
      if w.tls == "internal" then
        ''
          skip_install_trust
          auto_https disable_redirects
        ''
      else
        ""
    );

  # The sites: the box origin, then one origin per web user. Every dial is a
  # literal path.
  caddySites =
    w:
    ''
      # Generated by the agent-box NixOS module: the box origin and one origin per agent user.
      ${w.domain} {
    ''
    + tlsLine w.tls
    + securityHeaders w.tls
    + (
      if w.hooks == { } then
        toPages [ cookies.session ]
      else
        # The webhooks: the one route without a login, each user's to that
        # user's hook listener; everything else to the auth service.
        concatStringsSep "" (
          map (u: ''
            	handle ${forUser routes.hooks.path u} {
            		request_body {
            			max_size ${toString (hookBodyCap w.hooks.${u})}
            		}
            		reverse_proxy unix/${sock "hook" u} {
            			header_up -Cookie
            			header_up -Authorization
            			header_up ${headers.client} {remote_host}
            		}
            	}
          '') (sortStrings (attrNames w.hooks))
        )
        + "\thandle {\n"
        + prefixLines "\t" (toPages [ cookies.session ])
        + "\t}\n"
    )
    + "}\n"
    + concatStringsSep "" (
      map (
        u:
        ''

          ${origin w u} {
        ''
        + tlsLine w.tls
        + securityHeaders w.tls
        + "\thandle ${routes.authPages.path} {\n"
        + prefixLines "\t" (toPages [
          cookies.session
          (cookies.handoverPrefix + u)
        ])
        + ''
          	}
          	handle {
          		route {
          			request_header -${headers.user}
          			request_header -${headers.session}
          			forward_auth unix/${sockets.authVerify.path} {
          				uri ${routes.verify.path}?user=${u}
          				${keepCookies [ cookies.session ]}
          				header_up ${headers.client} {remote_host}
          				copy_headers ${headers.user} ${headers.session}
          			}
          			reverse_proxy unix/${sock "web" u} {
          				header_up -Cookie
          				header_up -Authorization
          			}
          		}
          	}
          }
        ''
      ) w.users
    );

  # The auth service's sockets (contract keys), and each per-user path.
  authSockets = [
    "authVerify"
    "authPages"
    "authStatus"
    "authControl"
  ];
  sock = name: u: forUser sockets.${name}.path u;
in
{
  inherit normalize assertions;

  # Fixed store names of the web surface's files.
  storeNames = {
    authEnv = "agent-box-auth-env";
    authConfig = "agent-box-auth-config.json";
    caddyGlobal = "agent-box-caddy-global.caddy";
    caddySites = "agent-box-caddy-sites.caddy";
    hooks = hooksName;
  };

  # The texts of the web surface's store files, by store name: the auth
  # service's configuration, Caddy's two files, and the hooks'
  # configuration of each user with webhooks.
  storeTexts =
    w:
    {
      "agent-box-auth-config.json" = authConfig w;
      "agent-box-caddy-global.caddy" = caddyGlobal w;
      "agent-box-caddy-sites.caddy" = caddySites w;
    }
    // listToAttrs (
      map (u: {
        name = hooksName u;
        value = hooksConfig w u;
      }) (attrNames w.hooks)
    );

  # The web surface's drop-ins and enablement, like units.nix's dropins:
  # unit name -> { text; wantedBy; }. host: { pathsOf; authEnv; authConfig;
  # webFile; caddyGroup; } (pathsOf: user -> { env; seed; agents; }).
  dropins =
    n: w: host:
    if !w.enable then
      { }
    else
      {
        ${units.auth} = {
          text = authDropin w host;
          wantedBy = [ ];
        };
      }
      // listToAttrs (
        map (
          s:
          let
            inherit (sockets.${s}) unit caddy;
          in
          {
            name = unit;
            value = {
              text =
                if caddy then
                  socketDropin unit host.caddyGroup
                else
                  "# Generated by the agent-box NixOS module: ${unit} is enabled.\n";
              wantedBy = [ "sockets.target" ];
            };
          }
        ) authSockets
      )
      // listToAttrs (
        concatMap (
          name:
          let
            u = n.users.${name};
            p = host.pathsOf u;
          in
          [
            {
              name = forUser sockets.web.unit name;
              value = {
                text = socketDropin (forUser sockets.web.unit name) host.caddyGroup;
                wantedBy = [ "sockets.target" ];
              };
            }
            {
              name = forUser units.web name;
              value = {
                text = webDropin w u p (host.webFile (hooksName name));
                wantedBy = [ ];
              };
            }
          ]
          ++ (
            if w.hooks ? ${name} then
              [
                {
                  name = forUser sockets.hook.unit name;
                  value = {
                    text = socketDropin (forUser sockets.hook.unit name) host.caddyGroup;
                    wantedBy = [ "sockets.target" ];
                  };
                }
              ]
            else
              [ ]
          )
          ++ [
            {
              name = forUser units.term name;
              value = {
                text = termDropin u p;
                wantedBy = [ "multi-user.target" ];
              };
            }
          ]
        ) (filter (u: n.users ? ${u}) w.users)
      );
}
