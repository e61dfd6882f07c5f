# What the glue builds for each user, as names and text (builtins only).
{ contract, ... }:
{
  # pkgs attributes every user environment holds besides the runtime, tmux,
  # the agents and extraPackages.
  basePackages = [
    "bashInteractive"
    "coreutils"
    "findutils"
    "gnugrep"
    "gnused"
    "less"
  ];

  # The fixed store names of a user's files, so that the only varying part
  # of every rendered store path is its hash: the glue builds derivations of
  # these names, the goldens use zero-hash paths of them.
  storeNames = user: {
    env = "agent-box-env-${user}";
    seed = "agent-box-seed-${user}.json";
    agents = "agent-box-agents-${user}.json";
  };

  # ... of an app's environment (its packages), by the app's label
  # (contract.apps.label) ...
  appStoreName = label: "agent-box-app-${label}";

  # ... of the host-wide runtime that host-wide files name (Claude Code's
  # managed hook) ...
  runtimeStoreName = "agent-box-runtime";

  # ... and of the web surface's files: the auth service's environment and
  # configuration, Caddy's two files, and each user's hooks configuration.
  webStoreNames = {
    authEnv = "agent-box-auth-env";
    authConfig = "agent-box-auth-config.json";
    caddyGlobal = "agent-box-caddy-global.caddy";
    caddySites = "agent-box-caddy-sites.caddy";
    hooks = user: "agent-box-hooks-${user}.json";
    clients = "${contract.web.agentsClient.table}.nft";
  };

  # go.mod of the runtime as the module builds it: no requirements (the
  # runtime is standard library only), so buildGoModule needs no vendorHash.
  runtimeGoMod = "module github.com/agent-box/agent-box\n\ngo 1.25\n";
}
