# The checks of the web surface and of the webhooks, on the normalized
# options n (its web settings and users); the values the runtime checks too
# come from the contract and formats.nix, and the shared case table
# (tests/lib/contract-cases.json) holds both sides to them.
{
  prim,
  formats,
  contract,
  ...
}:
let
  inherit (builtins)
    attrNames
    elem
    filter
    map
    match
    ;
  inherit (prim)
    concatMap
    nameRe
    show
    ;
  inherit (formats)
    atLeast
    banTimeRe
    domainFormat
    durationSeconds
    secretPath
    validDomain
    ;
  inherit (contract) names;
  hookLimits = contract.webhooks;
  checkInterval = contract.web.terminalCheckInterval;
  # v is a Go duration within the contract's interval iv
  within =
    iv: v:
    let
      s = durationSeconds v;
    in
    s != null && s >= durationSeconds iv.min && s <= durationSeconds iv.max;

  prefix = "services.agent-box.web";

  # The smallest quota that holds one delivery of a hook's largest size.
  minQuota = h: 2 * h.maxBodySize + hookLimits.quotaSlack;

  # Checks of the webhooks (with or without the web surface).
  hookChecks =
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
          assertion = atLeast hookLimits.retentionMin h.retention;
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

  surfaceChecks =
    n: caddyGroup:
    let
      w = n.web;
    in
    if !w.enable then
      [ ]
    else
      [
        {
          assertion = validDomain w.domain;
          message = "${prefix}.domain = ${show w.domain}: use ${domainFormat.what} (for example \"box.example.com\" or \"box.localhost:8443\").";
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
          assertion = within checkInterval w.terminalCheckInterval;
          message = "${prefix}.terminalCheckInterval = ${show w.terminalCheckInterval}: use a Go duration from ${checkInterval.min} to ${checkInterval.max}, such as ${show checkInterval.default}.";
        }
        {
          assertion = within contract.approvals.wait w.approvals.wait;
          message = "${prefix}.approvals.wait = ${show w.approvals.wait}: use a Go duration from ${contract.approvals.wait.min} to ${contract.approvals.wait.max}, such as ${show contract.approvals.wait.default}.";
        }
        {
          assertion = within contract.approvals.actionLifetime w.approvals.actionLifetime;
          message = "${prefix}.approvals.actionLifetime = ${show w.approvals.actionLifetime}: use a Go duration from ${contract.approvals.actionLifetime.min} to ${contract.approvals.actionLifetime.max}, such as ${show contract.approvals.actionLifetime.default}.";
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
        {
          assertion = l.notifyUrlFile == null || secretPath l.notifyUrlFile;
          message = "${prefix}.logins.${show l.name}.notify.urlFile = ${show l.notifyUrlFile}: use an absolute path outside the Nix store (a root-only file: the URL holds its token; the store is world-readable), without ':'.";
        }
      ]) w.logins
      ++ concatMap (u: [
        {
          assertion = n.users ? ${u};
          message = "${prefix}.logins names the agent user ${show u}, which services.agent-box.users does not define.";
        }
        {
          assertion = match names.webUser.pattern u != null;
          message = "${prefix}.logins opens the agent user ${show u}, whose name cannot be a host name label (its origin is ${u}.${w.domain}): start with a letter, then lowercase letters, digits and inner '-' (at most 32).";
        }
      ]) w.users
      ++ map (u: {
        assertion = !elem caddyGroup n.users.${u}.extraGroups;
        message = "services.agent-box.users.${show u}.extraGroups contains ${show caddyGroup}, Caddy's group: that user could connect to every socket Caddy may dial (every user's web daemon, the auth service). Remove it.";
      }) (filter (u: n.users ? ${u}) (attrNames n.users));
in
# n: the normalized options; caddyGroup: services.caddy.group.
n: caddyGroup: hookChecks n.web ++ surfaceChecks n caddyGroup
