# Which drop-ins, /etc files and store texts a configuration installs and
# which units it enables, as data that both the glue (systemd.units,
# environment.etc, the web surface's store files) and the offline golden
# rendering (installed.nix) read, so the two cannot name them differently:
# the one place that assembles what is installed.
#
# host is where the glue (or the offline rendering) says things are:
# { pathsOf (user -> { env; seed; agents; }); runtime (the agent-box
#   package, at a fixed store name); appEnv (an app -> the store path of
#   its packages); authEnv; authConfig;
#   webFile (a store name of web.storeTexts -> its path); caddyGroup; nft
#   (nft's absolute path) } (the last five only matter with the web surface).
{
  prim,
  render,
  contract,
  agentFiles,
  webUnits,
  ...
}:
let
  inherit (builtins)
    filter
    listToAttrs
    map
    ;
  inherit (prim) concatMap forUser dropinEntry;
  entry = dropinEntry;
  inherit (contract) units;

  # The kernel setting's file under /etc (the glue restarts systemd-sysctl
  # when it changes).
  sysctlFile = "sysctl.d/60-agent-box.conf";

  # Per app: its service (enabled: a waiting app is a running unit) and
  # its socket.
  appDropins =
    n: host: a:
    [
      (entry a.unit (render.app.service a (builtins.filter (x: x.name != a.name) n.users.${a.user}.apps) host.runtime (host.appEnv a)) [
        "multi-user.target"
      ])
      (entry a.socketUnit (render.app.socket a (if n.web.enable then host.caddyGroup else null)) [
        "sockets.target"
      ])
    ];

  # n: normalized options -> unit name -> { text (the drop-in); wantedBy; }.
  # Per user: the supervisor (enabled; it pulls in the sessions unit with
  # Requires=), the sessions unit, the user's slice, its disk quota's unit
  # (enabled, with a diskQuota) and the apps.
  dropins =
    n: host:
    listToAttrs (
      concatMap (
        name:
        let
          u = n.users.${name};
          p = host.pathsOf u;
        in
        [
          (entry (forUser units.supervisor name) (render.instance u p n) [ "multi-user.target" ])
          (entry (forUser units.sessions name) (render.sessions u p) [ ])
          (entry (prim.userSlice name) (render.slice.user u) [ ])
        ]
        ++ (if u.diskQuota == null then [ ] else [ (entry (forUser units.disk name) (render.disk u p) [ "multi-user.target" ]) ])
        ++ concatMap (appDropins n host) u.apps
      ) n.userNames
    )
    // {
      "agent-box.slice" = {
        text = render.slice.box n.slice;
        wantedBy = [ ];
      };
    }
    // webUnits.dropins n host;

  # n, host -> path under /etc -> text: the login files, and fail2ban's
  # filter and jail (installed as files, so a NixOS host and the VM tier run
  # the same bytes; nixpkgs' fail2ban reads jail.d/*.local after jail.local).
  etcFiles =
    n: host:
    listToAttrs (
      map (name: {
        name = "agent-box/users/${name}.env";
        value = render.login n.users.${name} (host.pathsOf n.users.${name}) n.defaultAgent;
      }) n.userNames
    )
    // (
      if n.web.fail2ban.enable then
        {
          "fail2ban/filter.d/agent-box-auth.local" = render.fail2ban.filter;
          "fail2ban/jail.d/agent-box-auth.local" = render.fail2ban.jail n.web host.nftables;
        }
        // (
          if host.nftables then
            { "fail2ban/action.d/agent-box-nftables.local" = render.fail2ban.nftablesAction; }
          else
            { }
        )
      else
        { }
    )
    // {
      "tmpfiles.d/agent-box-apps.conf" = render.app.tmpfiles n;
    }
    // (if n.apps == [ ] then { } else { ${contract.apps.manage.polkitRules} = render.app.polkitRules n; })
    // agentFiles.files n host
    // (
      if n.web.enable && n.web.ptraceScope != null then
        {
          ${sysctlFile} = render.sysctl n.web.ptraceScope;
        }
      else
        { }
    );

  # n: normalized options -> unit file name -> text: the units the module
  # generates whole (a mount cannot be a template): each user's runtime
  # directory's mount.
  mounts =
    n:
    listToAttrs (
      map (u: {
        name = render.runtimeMount.name u;
        value = render.runtimeMount.text u;
      }) n.userNames
    );
in
{
  inherit
    dropins
    etcFiles
    mounts
    sysctlFile
    ;
  inherit (webUnits) storeTexts;
}
