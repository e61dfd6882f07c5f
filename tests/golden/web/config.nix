# The web surface: two logins (one opening alice and bob, one only alice),
# three agent users (carol has no web origin: no login opens her), Caddy's
# internal CA on box.localhost:8443, which the VM tier and `make demo`
# serve, its port open in the firewall (the fail2ban check's client is in
# another network namespace) and a ban after three failed logins. alice's
# webhook `ci` wakes her session `inbox` (a shell, so the notice typed into it
# runs and reads the delivery); `bulk` only stores (the power-cut check).
# ops's notifications go out (alice-only has none). alice has two apps.
# The hash, secret and URL files are written by the VM harness (the public demo passwords,
# secrets and URL of tests/scenarios/demo-logins, demo-hooks, demo-notify).
{ pkgs, ... }:
{
  enable = true;
  users.alice.sessions.main = { };
  users.alice.sessions.inbox = { };
  users.alice.webhooks.ci = {
    secretFile = "/etc/agent-box-demo/alice-ci.hook";
    session = "inbox";
    notify = "cat \"$AGENT_BOX_HOOKS_DIR/ci/{id}.json\" > ~/seen-{id}.json";
    maxBodySize = 65536;
    quota = 1048576;
  };
  users.alice.webhooks.bulk = {
    secretFile = "/etc/agent-box-demo/alice-bulk.hook";
    session = "main";
  };
  # alice's apps (the apps scenario): a record store
  # declared before its program exists, with short restart delays (the
  # scenario counts restarts, it does not wait minutes), behind the login;
  # a public site that waits for its index.html. Their origins are on a
  # domain of their own (a separate site from the box's).
  users.alice.apps.records = {
    command = [
      "python3"
      "records.py"
    ];
    packages = [ pkgs.python3 ];
    restartDelay = "200ms";
    restartDelayMax = "2s";
    memoryMax = "256M";
    environment.RECORDS_SYNC = "1";
  };
  users.alice.apps.site = {
    command = [
      "python3"
      "-m"
      "http.server"
      "--bind"
      "127.0.0.1"
      "8080"
    ];
    waitFor = "index.html";
    packages = [ pkgs.python3 ];
    public = true;
  };
  users.bob.sessions.main = { };
  users.carol.sessions.main = { };
  web = {
    enable = true;
    domain = "box.localhost:8443";
    appsDomain = "apps.localhost:8443";
    tls = "internal";
    openFirewall = true;
    fail2ban.maxretry = 3;
    # The VM tier's checks that a revoked or expired login's terminal
    # closes wait for this, not for the default 30 s.
    terminalCheckInterval = "5s";
    logins.ops = {
      hashedPasswordFile = "/etc/agent-box-demo/ops.hash";
      # notifications out (the VM tier's receiver: tests/scenarios/demo-notify)
      notify.urlFile = "/etc/agent-box-demo/ops.notify";
      users = [
        "alice"
        "bob"
      ];
    };
    logins.alice-only = {
      hashedPasswordFile = "/etc/agent-box-demo/alice-only.hash";
      users = [ "alice" ];
    };
  };
}
