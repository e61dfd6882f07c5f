# Check `golden`: the installed truth of each golden configuration equals the
# fixture the offline tier renders.
#
# For every name in goldens, a NixOS configuration sets services.agent-box to
# tests/golden/<name>/config.nix and builds its real /etc/systemd/system tree
# (config.environment.etc."systemd/system".source, made by generateUnits).
# golden-check.sh captures every agent-box entry of that tree (dereferenced,
# store hashes zeroed, relative links as "name -> target", plus the seed and
# agents files the drop-ins name), every environment.etc entry under
# agent-box/ (the login files), and diffs it against the fixture. Anything
# extra (a full agent-box@<user>.service shadowing the template, a
# NixOS-rendered drop-in carrying an injected PATH, another wants link)
# differs and fails.
{
  lib,
  pkgs,
  nixos,
  module,
  goldenDir,
  goldens,
  check-caddy-config,
}:

let
  inherit (lib) concatMapStrings escapeShellArg;

  configOf =
    name:
    (nixos [
      module
      (
        { pkgs, ... }:
        {
          services.agent-box = import (goldenDir + "/${name}/config.nix") { inherit pkgs; };
          # the golden host's firewall, as the offline renderer assumes
          networking.nftables.enable = true;
          # the claude golden's agent (pkgs.claude-code is unfree)
          nixpkgs.config.allowUnfreePredicate = pkg: lib.getName pkg == "claude-code";
        }
      )
    ]).config;

  treeOf = name: (configOf name).environment.etc."systemd/system".source;

  # The environment.etc entries under agent-box/, the module's fail2ban
  # filter, jail and ban action, its sysctl.d, tmpfiles.d and polkit rules files, and Caddy's
  # configuration (its agent-box imports are captured), as /etc/static
  # links them.
  etcOf =
    name:
    let
      etc = (configOf name).environment.etc;
    in
    pkgs.linkFarm "agent-box-etc-${name}" (
      map (n: {
        name = n;
        path = etc.${n}.source;
      }) (
        builtins.filter (
          n:
          builtins.substring 0 10 n == "agent-box/"
          || n == "caddy/caddy_config"
          || builtins.match "fail2ban/(filter|jail|action)[.]d/agent-box.*" n != null
          || builtins.match "sysctl[.]d/[0-9][0-9]-agent-box.*" n != null
          || builtins.match "tmpfiles[.]d/agent-box.*" n != null
          || builtins.match "polkit-1/rules[.]d/[0-9][0-9]-agent-box.*" n != null
          || n == "claude-code/CLAUDE.md"
          || n == "codex/config.toml"
          || builtins.match "opencode/(opencode[.]json|agent-box[.]js|AGENTS[.]md)" n != null
          || builtins.match "claude-code/managed-settings[.]d/[0-9][0-9]-agent-box.*" n != null
        ) (builtins.attrNames etc)
      )
    );

  # With the web surface: Caddy's own adapt of the installed Caddyfile must
  # hold the web contract (internal/caddycheck).
  caddyCheck =
    name:
    let
      c = import (goldenDir + "/${name}/config.nix") { inherit pkgs; };
      w = c.web or { };
      users = lib.unique (lib.concatMap (l: l.users) (builtins.attrValues (w.logins or { })));
      hookUsers = builtins.filter (u: (c.users.${u}.webhooks or { }) != { }) (
        builtins.attrNames (c.users or { })
      );
      # the apps of users with an origin, USER:APP[:public]
      apps = lib.concatMap (
        u:
        let
          apps = c.users.${u}.apps or { };
        in
        map (a: "${u}:${a}${lib.optionalString (apps.${a}.public or false) ":public"}") (builtins.attrNames apps)
      ) (builtins.filter (u: builtins.elem u users) (builtins.attrNames (c.users or { })));
      caddyfile = (configOf name).environment.etc."caddy/caddy_config".source;
    in
    lib.optionalString (w.enable or false) ''
      echo "golden: ${name}: caddy adapt of /etc/caddy/caddy_config"
      HOME=$TMPDIR XDG_DATA_HOME=$TMPDIR XDG_CONFIG_HOME=$TMPDIR \
        ${lib.getExe pkgs.caddy} adapt --config ${caddyfile} --adapter caddyfile >"$TMPDIR/adapted.json"
      if ! ${lib.getExe check-caddy-config} -domain ${escapeShellArg w.domain} -users ${escapeShellArg (lib.concatStringsSep "," users)} -hooks ${escapeShellArg (lib.concatStringsSep "," hookUsers)} -apps-domain ${escapeShellArg (if (w.appsDomain or null) == null then "" else w.appsDomain)} -apps ${escapeShellArg (lib.concatStringsSep "," apps)} <"$TMPDIR/adapted.json"; then
        echo "golden: ${name}: the Caddyfile NixOS installs breaks the web contract" >&2
        failed+=(${escapeShellArg name})
      fi
    '';
in
pkgs.runCommand "agent-box-golden"
  {
    nativeBuildInputs = [ pkgs.diffutils ];
  }
  ''
    failed=()
    mkdir -p "$out"
    ${concatMapStrings (name: ''
      echo "golden: ${name}"
      if ! bash ${./golden-check.sh} ${treeOf name} ${etcOf name} ${goldenDir}/${escapeShellArg name} "$out"/${escapeShellArg name}; then
        echo "golden: ${name}: NixOS installs something else than tests/golden/${name}" >&2
        failed+=(${escapeShellArg name})
      fi
      ${caddyCheck name}
    '') goldens}
    if [ "''${#failed[@]}" -gt 0 ]; then
      echo "golden: failed for: ''${failed[*]}" >&2
      echo "hint: the fixture is rendered offline (go test ./internal/golden -run TestFixtures); if it is right, the NixOS glue in modules/src/agent-box.nix is wrong" >&2
      exit 1
    fi
  ''
