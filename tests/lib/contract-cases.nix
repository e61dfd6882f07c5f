# The shared case table of the contract (contract-cases.json) through the
# module's checks: for each rule, the messages of the assertions each case
# fails ([ ] when it is accepted). internal/contractcases runs the same
# table through the runtime's configuration loaders and compares both
# with the table.
{ offline }:
let
  inherit (builtins)
    concatStringsSep
    fromJSON
    genList
    mapAttrs
    readFile
    ;
  table = fromJSON (readFile ./contract-cases.json);
  # n bytes of "a", built by doubling (a list of n strings would be slow).
  bytes =
    n:
    if n <= 0 then
      ""
    else
      let
        half = bytes (n / 2);
      in
      half + half + (if n - 2 * (n / 2) == 1 then "a" else "");
  failing = offline.failures;
  slack = offline.lib.contract.webhooks.quotaSlack;
  goodHook = {
    secretFile = "/var/lib/secrets/gh.hook";
    session = "main";
  };
  # alice, and a web surface with one login opening her; w overrides web.
  web = w: {
    users.alice = { };
    web = {
      enable = true;
      domain = "box.example.com";
      logins.ops = {
        hashedPasswordFile = "/var/lib/secrets/ops.hash";
        users = [ "alice" ];
      };
    }
    // w;
  };
  # ... with alice's hook gh = goodHook // h.
  withHook =
    w: h:
    web w
    // {
      users.alice.webhooks.gh = goodHook // h;
    };
  rules = {
    login =
      v:
      web {
        logins.${v} = {
          hashedPasswordFile = "/var/lib/secrets/login.hash";
          users = [ "alice" ];
        };
      };
    webUser = v: {
      users.${v} = { };
      web = {
        enable = true;
        domain = "box.example.com";
        logins.ops = {
          hashedPasswordFile = "/var/lib/secrets/ops.hash";
          users = [ v ];
        };
      };
    };
    app =
      v:
      web { }
      // {
        users.alice.apps.${v}.command = [ "x" ];
      };
    session = v: withHook { } { session = v; };
    hook =
      v:
      web { }
      // {
        users.alice.webhooks.${v} = goodHook;
      };
    notify = v: withHook { } { notify = v; };
    notifyLength = n: withHook { } { notify = concatStringsSep "" (genList (_: "x") n); };
    maxBodySize =
      v:
      withHook { } {
        maxBodySize = v;
        quota = 2 * v + slack;
      };
    quota = v: withHook { } { inherit (v) maxBodySize quota; };
    retention = v: withHook { } { retention = v; };
    concurrency = v: withHook { webhookConcurrency = v; } { };
    sessionLifetime = v: web { sessionLifetime = v; };
    idleTimeout = v: web { idleTimeout = v; };
    terminalCheckInterval = v: web { terminalCheckInterval = v; };
    approvalWait = v: web { approvals.wait = v; };
    actionLifetime = v: web { approvals.actionLifetime = v; };
    restartDelay =
      v:
      web { }
      // {
        users.alice.apps.a = {
          command = [ "x" ];
          restartDelay = v;
          restartDelayMax = "1h";
        };
      };
    silenceAfter = v: {
      users.alice = { };
      attention.silenceAfter = v;
    };
    diskQuota = v: { users.alice.diskQuota = v; };
    usageLimitWaits = v: {
      users.alice = { };
      usageLimits = { inherit (v) firstWait maxWait; };
    };
    usageLimitGrowth = v: {
      users.alice = { };
      usageLimits.growth = v;
    };
    domain = v: web { domain = v; };
    # The session limits: v lists the lengths of the arguments of alice's
    # session main; the length of its working directory; how many sessions
    # she has.
    sessionArgs = v: { users.alice.sessions.main.args = map bytes v; };
    sessionCwd = v: { users.alice.sessions.main.workingDirectory = "/" + bytes (v - 1); };
    sessionCount = v: {
      users.alice.sessions = builtins.listToAttrs (
        genList (i: {
          name = "s${toString i}";
          value = { };
        }) v
      );
    };
  };
in
mapAttrs (rule: cases: map (c: failing (rules.${rule} c.value)) cases) table
