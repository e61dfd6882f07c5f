# Which drop-ins and /etc files a configuration installs and which units it
# enables, as data that both the glue (systemd.units, environment.etc) and
# the offline golden rendering (`installed`) read, so the two cannot name
# them differently.
{
  prim,
  render,
  ...
}:
let
  inherit (builtins) attrNames foldl' listToAttrs map;

  # n: normalized options; pathsOf: user -> { env; seed; agents; }.
  # -> unit name -> { text (the drop-in); wantedBy; }.
  dropins =
    n: pathsOf:
    listToAttrs (
      map (name: {
        name = "agent-box@${name}.service";
        value = {
          text = render.instance n.users.${name} (pathsOf n.users.${name}) n.defaultAgent;
          wantedBy = [ "multi-user.target" ];
        };
      }) n.userNames
    )
    // {
      "agent-box.slice" = {
        text = render.slice n.slice;
        wantedBy = [ ];
      };
    };

  # n, pathsOf as above -> path under /etc -> text.
  etcFiles =
    n: pathsOf:
    listToAttrs (
      map (name: {
        name = "agent-box/users/${name}.env";
        value = render.login n.users.${name} (pathsOf n.users.${name}) n.defaultAgent;
      }) n.userNames
    );
in
{
  inherit dropins etcFiles;

  # Everything the module installs for a configuration, as the golden
  # fixtures record it: files (path relative to / -> bytes) and links
  # (path -> target). units: the verbatim units (file name -> bytes);
  # storePath: a fixed store name -> its store path. This mirrors how NixOS
  # installs the glue's systemd.packages, systemd.units (asDropin) and
  # environment.etc, and the seed and agents files the drop-ins name.
  installed =
    n: units: storePath:
    let
      sys = "etc/systemd/system";
      pathsOf = u: {
        env = storePath u.files.env;
        seed = storePath u.files.seed;
        agents = storePath u.files.agents;
      };
      d = dropins n pathsOf;
      etc = etcFiles n pathsOf;
      userFiles = map (
        name:
        let
          u = n.users.${name};
          p = pathsOf u;
        in
        {
          "${prim.relative p.seed}" = render.seed u;
          "${prim.relative p.agents}" = render.agentsTable n u p.env;
        }
      ) n.userNames;
    in
    {
      files =
        listToAttrs (
          map (u: {
            name = "${sys}/${u}";
            value = units.${u};
          }) (attrNames units)
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
        // foldl' (a: b: a // b) { } userFiles;
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
