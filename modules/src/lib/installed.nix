# Everything the module installs for a configuration, as the golden fixtures
# record it (builtins only): units.nix says what is installed, this file
# lays it out as files and links the way NixOS does.
{
  prim,
  render,
  build,
  units,
  ...
}:
let
  inherit (builtins) attrNames foldl' listToAttrs map;
in
{
  # Everything the module installs for a configuration, as the golden
  # fixtures record it: files (path relative to / -> bytes) and links
  # (path -> target). units: { base; web; apps; } the verbatim units (file name ->
  # bytes); storePath: a fixed store name -> its store path. This mirrors how
  # NixOS installs the glue's systemd.packages, systemd.units (asDropin) and
  # environment.etc, the seed and agents files the drop-ins name, and the web
  # surface's store files (with Caddy's group "caddy").
  installed =
    n: verbatimUnits: storePath:
    let
      sys = "etc/systemd/system";
      host = {
        pathsOf = u: {
          env = storePath u.files.env;
          seed = storePath u.files.seed;
          agents = storePath u.files.agents;
        };
        runtime = storePath build.runtimeStoreName;
        appEnv = a: storePath a.files;
        authEnv = storePath build.webStoreNames.authEnv;
        authConfig = storePath build.webStoreNames.authConfig;
        webFile = storePath;
        caddyGroup = "caddy";
        nft = "${storePath "nftables"}/bin/nft";
        # the golden host's firewall is nftables (networking.nftables.enable),
        # as in the VM tier's guest and the flake's NixOS nodes
        nftables = true;
      };
      d = units.dropins n host;
      etc = units.etcFiles n host;
      verbatim =
        verbatimUnits.base
        // (if n.web.enable then verbatimUnits.web else { })
        // (if n.apps != [ ] then verbatimUnits.apps else { })
        // units.mounts n;
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
            texts = units.storeTexts n;
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
