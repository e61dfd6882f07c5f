# Which drop-ins and /etc files a configuration installs and which units it
# enables, as data that both the glue (systemd.units, environment.etc) and
# the offline golden rendering (`installed`) read, so the two cannot name
# them differently.
#
# host is where the glue (or the offline rendering) says things are:
# { pathsOf (user -> { env; seed; agents; }); authEnv; authConfig;
#   webFile (a store name of web.storeTexts -> its path); caddyGroup; } (the
#   last four only matter with the web surface).
{
  prim,
  render,
  web,
  contract,
  ...
}:
let
  inherit (builtins) attrNames foldl' listToAttrs map;

  # n: normalized options -> unit name -> { text (the drop-in); wantedBy; }.
  dropins =
    n: host:
    listToAttrs (
      map (name: {
        name = prim.forUser contract.units.supervisor name;
        value = {
          text = render.instance n.users.${name} (host.pathsOf n.users.${name}) n.defaultAgent;
          wantedBy = [ "multi-user.target" ];
        };
      }) n.userNames
    )
    // {
      "agent-box.slice" = {
        text = render.slice n.slice;
        wantedBy = [ ];
      };
    }
    // web.dropins n n.web host;

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
    // (
      if n.web.enable && n.web.ptraceScope != null then
        {
          "sysctl.d/60-agent-box.conf" = render.sysctl n.web.ptraceScope;
        }
      else
        { }
    );
in
{
  inherit dropins etcFiles;

  # Everything the module installs for a configuration, as the golden
  # fixtures record it: files (path relative to / -> bytes) and links
  # (path -> target). units: { base; web; } the verbatim units (file name ->
  # bytes); storePath: a fixed store name -> its store path. This mirrors how
  # NixOS installs the glue's systemd.packages, systemd.units (asDropin) and
  # environment.etc, the seed and agents files the drop-ins name, and the web
  # surface's store files (with Caddy's group "caddy").
  installed =
    n: units: storePath:
    let
      sys = "etc/systemd/system";
      host = {
        pathsOf = u: {
          env = storePath u.files.env;
          seed = storePath u.files.seed;
          agents = storePath u.files.agents;
        };
        authEnv = storePath web.storeNames.authEnv;
        authConfig = storePath web.storeNames.authConfig;
        webFile = storePath;
        caddyGroup = "caddy";
        # the golden host's firewall is nftables (networking.nftables.enable),
        # as in the VM tier's guest and the flake's NixOS nodes
        nftables = true;
      };
      d = dropins n host;
      etc = etcFiles n host;
      verbatim = units.base // (if n.web.enable then units.web else { });
      store = path: text: { "${prim.relative path}" = text; };
      userFiles = map (
        name:
        let
          u = n.users.${name};
          p = host.pathsOf u;
        in
        store p.seed (render.seed u) // store p.agents (render.agentsTable n u p.env)
      ) n.userNames;
      webFiles =
        if n.web.enable then
          let
            texts = web.storeTexts n.web;
          in
          foldl' (a: name: a // store (storePath name) texts.${name}) { } (attrNames texts)
        else
          { };
    in
    {
      files =
        listToAttrs (
          map (u: {
            name = "${sys}/${u}";
            value = verbatim.${u};
          }) (attrNames verbatim)
        )
        // listToAttrs (
          map (u: {
            name = "${sys}/${u}.d/overrides.conf";
            value = d.${u}.text;
          }) (attrNames d)
        )
        // listToAttrs (
          map (f: {
            name = "etc/${f}";
            value = etc.${f};
          }) (attrNames etc)
        )
        // foldl' (a: b: a // b) { } userFiles
        // webFiles;
      links = listToAttrs (
        prim.concatMap (
          u:
          map (target: {
            name = "${sys}/${target}.wants/${u}";
            value = "../${u}";
          }) d.${u}.wantedBy
        ) (attrNames d)
      );
    };
}
