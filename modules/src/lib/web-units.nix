# The web surface's drop-ins and store texts (units.nix installs them with
# the rest): the auth service, its sockets and the agents' table's unit;
# per user with an origin the web daemon, its socket(s) and the terminal;
# the auth service's configuration, Caddy's files, the agents' nftables
# table and the hooks' configuration. host: as in units.nix.
{
  prim,
  render,
  build,
  contract,
  ...
}:
let
  inherit (builtins) attrNames filter listToAttrs map;
  inherit (prim) concatMap forUser dropinEntry;
  entry = dropinEntry;
  inherit (contract) sockets units;
  names = build.webStoreNames;
in
{
  # The web surface's drop-ins: the auth service and its sockets, and per
  # user with an origin the web daemon, its socket(s) and the terminal.
  dropins =
    n: host:
    let
      w = n.web;
      socket = unit: entry unit (render.socket.caddy unit host.caddyGroup) [ "sockets.target" ];
      userSocket =
        unit: name: entry unit (render.socket.user unit host.caddyGroup name) [ "sockets.target" ];
      authSocket =
        s:
        let
          inherit (sockets.${s}) unit caddy;
        in
        if caddy then socket unit else entry unit (render.socket.enabled unit) [ "sockets.target" ];
      perUser =
        name:
        let
          u = n.users.${name};
          p = host.pathsOf u;
        in
        [
          (userSocket (forUser sockets.web.unit name) name)
          (entry (forUser units.web name) (render.webDaemon.dropin w u p (host.webFile (names.hooks name))) [ ])
        ]
        ++ (if w.hooks ? ${name} then [ (userSocket (forUser sockets.hook.unit name) name) ] else [ ])
        ++ [ (entry (forUser units.term name) (render.term u p) [ "multi-user.target" ]) ];
      # the agents' own address on loopback
      clients = render.clients.dropin host.nft (host.webFile names.clients);
    in
    if !w.enable then
      { }
    else
      listToAttrs (
        [
          (entry units.auth (render.auth.dropin w host) [ ])
          (entry units.clients clients [ "multi-user.target" ])
        ]
        ++ map authSocket [
          "authVerify"
          "authPages"
          "authStatus"
          "authControl"
        ]
        # notifications out: their unit and its feed socket, only for them
        ++ (
          if render.auth.notifying w != [ ] then
            [
              (entry units.notify (render.auth.notifyDropin w host) [ ])
              (authSocket "notifyFeed")
            ]
          else
            [ ]
        )
        ++ concatMap perUser (filter (u: n.users ? ${u}) w.users)
      );

  # The web surface's store texts, by store name: the auth service's
  # configuration, Caddy's two files, the agents' nftables table and the
  # hooks' configuration of each user with webhooks. n: normalized options.
  storeTexts =
    n:
    let
      w = n.web;
    in
    {
      ${names.authConfig} = render.auth.config w;
      ${names.clients} = render.clients.rules n;
      ${names.caddyGlobal} = render.caddy.global w;
      ${names.caddySites} = render.caddy.sites w;
    }
    // listToAttrs (
      map (u: {
        name = names.hooks u;
        value = render.hooks.config w u;
      }) (attrNames w.hooks)
    );
}
