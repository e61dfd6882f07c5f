# The pure core of the agent-box module: defaults, normalisation,
# validation and the renderers of every host-specific file. Builtins only (no
# nixpkgs), so the test suite evaluates exactly these bytes, as they appear
# inside the generated module, with a plain Nix evaluator.
let
  systemd =
    @@include:systemd.nix@@
    ;
  options =
    @@include:options.nix@@
    ;

  inherit (builtins)
    attrNames
    concatStringsSep
    elem
    filter
    foldl'
    hasAttr
    isString
    length
    listToAttrs
    map
    mapAttrs
    match
    sort
    substring
    toJSON
    ;

  concatMap = f: l: builtins.concatLists (map f l);
  unique = foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ];
  sortStrings = sort (a: b: a < b);
  hasPrefix = p: s: substring 0 (builtins.stringLength p) s == p;
  show = toJSON; # quotes and escapes a value for a message

  # Defaults: fill every unset option from its spec, recursively through
  # submodules, exactly as the module system does for the declared options.
  applySpecs =
    path: specs: value:
    mapAttrs (
      name: spec:
      let
        here = "${path}.${name}";
        v =
          if hasAttr name value then
            value.${name}
          else if spec ? default then
            spec.default
          else
            throw "${here} is used but not defined";
      in
      if spec.type == "submodule" then
        applySpecs here spec.options v
      else if spec.type == "attrsOf submodule" then
        mapAttrs (n: applySpecs "${here}.${show n}" spec.options) v
      else
        v
    ) specs
    // removeAttrs value (attrNames specs);

  # Names in value that no spec declares (the module system rejects them
  # too; offline this catches typos in fixtures).
  unknownOptions =
    path: specs: value:
    concatMap (
      name:
      if !hasAttr name specs then
        [ "${path}.${name}" ]
      else
        let
          spec = specs.${name};
        in
        if spec.type == "submodule" then
          unknownOptions "${path}.${name}" spec.options value.${name}
        else if spec.type == "attrsOf submodule" then
          concatMap (n: unknownOptions "${path}.${name}.${show n}" spec.options value.${name}.${n}) (
            attrNames value.${name}
          )
        else
          [ ]
    ) (attrNames value);

  prefix = "services.agent-box";

  # Built-in agents: pkgs attribute, executable, leading arguments.
  builtinAgents = {
    shell = {
      packageAttr = "bashInteractive";
      command = "bash";
      args = [ ];
    };
    claude = {
      packageAttr = "claude-code";
      command = "claude";
      args = [ ];
    };
    codex = {
      packageAttr = "codex";
      command = "codex";
      args = [ ];
    };
    opencode = {
      packageAttr = "opencode";
      command = "opencode";
      args = [ ];
    };
  };

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

  # go.mod of the runtime as the module builds it: no requirements (the
  # runtime is standard library only), so buildGoModule needs no vendorHash.
  runtimeGoMod = "module github.com/agent-box/agent-box\n\ngo 1.25\n";

  # Variables agent-box sets itself; users may not override them.
  reservedVariable = name: elem name [ "PATH" "HOME" "USER" ] || hasPrefix "AGENT_BOX_" name;

  # Store paths of a user's files: the glue passes real ones, the goldens
  # pass zero-hash ones.
  names = user: {
    env = "agent-box-env-${user}";
    seed = "agent-box-seed-${user}.json";
    agents = "agent-box-agents-${user}.json";
  };

  # cfg (services.agent-box, defaults applied or not) -> the values the
  # renderers and the glue use.
  # The built-in agents under whatever the configuration sets of them (the
  # glue defines them with mkDefault; offline configurations omit them).
  withBuiltins =
    raw:
    let
      agents = raw.agents or { };
    in
    raw
    // {
      agents =
        mapAttrs (
          name: b:
          {
            package = null;
            inherit (b) command args;
          }
          // (agents.${name} or { })
        ) builtinAgents
        // removeAttrs agents (attrNames builtinAgents);
    };

  normalize =
    raw:
    let
      cfg = applySpecs prefix options (withBuiltins raw);
      agents = mapAttrs (name: a: a // { packageAttr = builtinAgents.${name}.packageAttr or null; }) cfg.agents;
      user =
        name: u:
        let
          sessions = map (
            s:
            let
              v = u.sessions.${s};
            in
            {
              name = s;
              agent = if v.agent == null then cfg.defaultAgent else v.agent;
              inherit (v) args;
              cwd = if v.workingDirectory == null then "/home/${name}" else v.workingDirectory;
            }
          ) (sortStrings (attrNames u.sessions));
        in
        {
          inherit name sessions;
          inherit (u)
            extraGroups
            environmentFiles
            memoryHigh
            memoryMax
            tasksMax
            cpuWeight
            ;
          home = "/home/${name}";
          agentNames = sortStrings (unique (map (s: s.agent) sessions ++ [ cfg.defaultAgent ] ++ u.agents));
          environment = map (k: {
            name = k;
            value = u.environment.${k};
          }) (sortStrings (attrNames u.environment));
          files = names name;
        };
    in
    {
      inherit (cfg) enable defaultAgent slice;
      inherit agents;
      users = mapAttrs user cfg.users;
      userNames = sortStrings (attrNames cfg.users);
    };

  validName = re: s: isString s && match re s != null;
  memoryRe = "([0-9]+[KMGT]?|[0-9]+(\\.[0-9]+)?%|infinity)";
  noNewline = s: match ".*[\n\r].*" s == null;

  # Every check as { assertion; message; }: the glue hands them to NixOS
  # `assertions`, the tests evaluate them offline.
  assertions =
    raw:
    let
      cfg = applySpecs prefix options (withBuiltins raw);
      n = normalize raw;
      unknown = unknownOptions prefix options raw;
      limitChecks =
        path: l:
        [
          {
            assertion = l.memoryHigh == null || validName memoryRe l.memoryHigh;
            message = "${path}.memoryHigh = ${show l.memoryHigh}: use a size such as \"8G\", a percentage such as \"60%\", \"infinity\" or null.";
          }
          {
            assertion = l.memoryMax == null || validName memoryRe l.memoryMax;
            message = "${path}.memoryMax = ${show l.memoryMax}: use a size such as \"12G\", a percentage such as \"75%\", \"infinity\" or null.";
          }
          {
            assertion = l.cpuWeight >= 1 && l.cpuWeight <= 10000;
            message = "${path}.cpuWeight = ${toString l.cpuWeight}: use a value from 1 to 10000.";
          }
          {
            assertion = l.tasksMax == null || l.tasksMax >= 1;
            message = "${path}.tasksMax = ${toString l.tasksMax}: use a positive number or null.";
          }
        ];
      agentChecks = concatMap (
        name:
        let
          a = n.agents.${name};
          path = "${prefix}.agents.${show name}";
        in
        [
          {
            assertion = validName "[A-Za-z0-9_-]{1,64}" name;
            message = "${path}: agent names use letters, digits, '_' and '-' (at most 64).";
          }
          {
            assertion = isString a.command && a.command != "" && noNewline a.command && (hasPrefix "/" a.command || match ".*/.*" a.command == null);
            message = "${path}.command = ${show a.command}: name an executable in the package's bin/ (no '/'), or give an absolute path.";
          }
        ]
      ) (attrNames n.agents);
      userChecks = concatMap (
        name:
        let
          u = n.users.${name};
          path = "${prefix}.users.${show name}";
        in
        [
          {
            assertion = validName "[a-z_][a-z0-9_-]{0,31}" name;
            message = "${path}: user names must match [a-z_][a-z0-9_-]{0,31} (lowercase, at most 32 characters).";
          }
        ]
        ++ concatMap (s: [
          {
            assertion = validName "[A-Za-z0-9_-]{1,64}" s.name;
            message = "${path}.sessions.${show s.name}: session names use letters, digits, '_' and '-' (1 to 64).";
          }
          {
            assertion = hasAttr s.agent n.agents;
            message = "${path}.sessions.${show s.name}.agent = ${show s.agent}: no such agent; define services.agent-box.agents.${show s.agent} or use one of ${show (attrNames n.agents)}.";
          }
          {
            assertion = hasPrefix "/" s.cwd && noNewline s.cwd;
            message = "${path}.sessions.${show s.name}.workingDirectory = ${show s.cwd}: use an absolute path.";
          }
        ]) u.sessions
        ++ map (a: {
          assertion = hasAttr a n.agents;
          message = "${path}.agents contains ${show a}: no such agent; define services.agent-box.agents.${show a} or remove it.";
        }) cfg.users.${name}.agents
        ++ concatMap (e: [
          {
            assertion = validName "[A-Za-z_][A-Za-z0-9_]*" e.name;
            message = "${path}.environment.${show e.name}: variable names must match [A-Za-z_][A-Za-z0-9_]*.";
          }
          {
            assertion = !reservedVariable e.name;
            message = "${path}.environment.${show e.name}: PATH, HOME, USER and AGENT_BOX_* are set by agent-box; add programs with services.agent-box.extraPackages instead of PATH.";
          }
          {
            assertion = noNewline e.value;
            message = "${path}.environment.${show e.name}: the value contains a newline, which a unit file cannot carry; put it in an environmentFiles file or the user's ~/.config/agent-box/env.";
          }
        ]) u.environment
        ++ map (f: {
          assertion = match "-?/.*" f != null && noNewline f;
          message = "${path}.environmentFiles contains ${show f}: use an absolute path (prefix '-' to ignore a missing file).";
        }) u.environmentFiles
        ++ limitChecks path u
      ) n.userNames;
    in
    [
      {
        assertion = unknown == [ ];
        message = "unknown agent-box options: ${concatStringsSep ", " unknown}.";
      }
      {
        assertion = hasAttr n.defaultAgent n.agents;
        message = "${prefix}.defaultAgent = ${show n.defaultAgent}: no such agent; use one of ${show (attrNames n.agents)}.";
      }
    ]
    ++ agentChecks
    ++ userChecks
    ++ limitChecks "${prefix}.slice" cfg.slice;

  # Messages of the failed assertions (the tests and `check` use this).
  failures = raw: map (a: a.message) (filter (a: !a.assertion) (assertions raw));

  # Renderers. `paths` = { env; seed; agents; } absolute store paths.

  # The instance drop-in agent-box@<user>.service.d/overrides.conf.
  dropin =
    u: paths: defaultAgent:
    let
      env = systemd.environmentLine;
      limit = k: v: if v == null then "" else "${k}=${toString v}\n";
    in
    ''
      # Generated by the agent-box NixOS module for agent-box@${u.name}.service.
      # Host-specific settings of the verbatim template agent-box@.service.
      [Unit]
      X-RestartIfChanged=false

      [Service]
      ExecStart=
      ExecStart=${paths.env}/bin/agent-box supervise
    ''
    + env "PATH" "${paths.env}/bin"
    + env "AGENT_BOX_AGENTS" paths.agents
    + env "AGENT_BOX_DEFAULT_AGENT" defaultAgent
    + env "AGENT_BOX_SEED" paths.seed
    + env "AGENT_BOX_TMUX" "${paths.env}/bin/tmux"
    + concatStringsSep "" (map (e: env e.name e.value) u.environment)
    + concatStringsSep "" (map (f: systemd.line "EnvironmentFile" f) u.environmentFiles)
    + limit "CPUWeight" u.cpuWeight
    + limit "MemoryHigh" u.memoryHigh
    + limit "MemoryMax" u.memoryMax
    + limit "TasksMax" u.tasksMax;

  # The box-wide drop-in agent-box.slice.d/overrides.conf.
  sliceDropin =
    s:
    let
      limit = k: v: if v == null then "" else "${k}=${toString v}\n";
    in
    ''
      # Generated by the agent-box NixOS module: box-wide limits of agent-box.slice.
      [Slice]
    ''
    + limit "CPUWeight" s.cpuWeight
    + limit "MemoryHigh" s.memoryHigh
    + limit "MemoryMax" s.memoryMax
    + limit "TasksMax" s.tasksMax;

  # The seed file AGENT_BOX_SEED (docs/runtime-contract.md).
  seed =
    u:
    toJSON {
      sessions = map (s: {
        inherit (s) name agent args;
        cwd = s.cwd;
      }) u.sessions;
    }
    + "\n";

  # The agents table AGENT_BOX_AGENTS: the user's agents, commands resolved
  # inside the user's environment.
  agentsTable =
    n: u: envPath:
    toJSON (
      listToAttrs (
        map (name: {
          inherit name;
          value = {
            command =
              let
                c = n.agents.${name}.command;
              in
              if hasPrefix "/" c then c else "${envPath}/bin/${c}";
            inherit (n.agents.${name}) args;
          };
        }) u.agentNames
      )
    )
    + "\n";

  # Everything the module installs for a configuration, as the golden
  # fixtures record it: files (path -> bytes) and links (path -> target).
  # storePath maps a fixed name to its store path.
  installed =
    raw: units: storePath:
    let
      n = normalize raw;
      sys = "etc/systemd/system";
      pathsOf = u: {
        env = storePath u.files.env;
        seed = storePath u.files.seed;
        agents = storePath u.files.agents;
      };
      perUser = map (
        name:
        let
          u = n.users.${name};
          p = pathsOf u;
        in
        {
          files = {
            "${sys}/agent-box@${name}.service.d/overrides.conf" = dropin u p n.defaultAgent;
            "${substring 1 (builtins.stringLength p.seed) p.seed}" = seed u;
            "${substring 1 (builtins.stringLength p.agents) p.agents}" = agentsTable n u p.env;
          };
          links."${sys}/multi-user.target.wants/agent-box@${name}.service" = "../agent-box@${name}.service";
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
        // { "${sys}/agent-box.slice.d/overrides.conf" = sliceDropin n.slice; }
        // foldl' (a: b: a // b.files) { } perUser;
      links = foldl' (a: b: a // b.links) { } perUser;
    };
in
{
  inherit
    systemd
    options
    builtinAgents
    basePackages
    runtimeGoMod
    names
    normalize
    assertions
    failures
    dropin
    sliceDropin
    seed
    agentsTable
    installed
    applySpecs
    ;
}
