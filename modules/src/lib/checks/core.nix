# Every check of a configuration as { assertion; message; }: the glue hands
# them to NixOS `assertions`, the offline suite evaluates them. Messages name
# the option and the fix. This file checks the users, agents and limits;
# checks/sessions.nix the sessions, checks/web.nix the web surface and the
# webhooks, checks/apps.nix the apps, checks/app-origins.nix the apps'
# origins, checks/attention.nix the attention and usage limits' settings.
{
  prim,
  formats,
  webChecks,
  appOriginChecks,
  appChecks,
  envChecks,
  sessionChecks,
  attentionChecks,
  contract,
  ...
}:
let
  inherit (builtins)
    attrNames
    filter
    hasAttr
    map
    match
    ;
  inherit (prim) concatMap hasPrefix nameRe show;

  prefix = "services.agent-box";
  inherit (contract.conversations) idPlaceholder promptPlaceholder claudeMinVersion;

  inherit (prim) matches noNewline;
  tasksReserve = contract.userTasks.reserve;
  inherit (formats) memoryRe;

  # Variables agent-box sets itself; users may not override them.
  reservedVariable = name: builtins.elem name [ "PATH" "HOME" "USER" ] || hasPrefix "AGENT_BOX_" name;

  limitChecks = path: l: [
    {
      assertion = l.memoryHigh == null || matches memoryRe l.memoryHigh;
      message = "${path}.memoryHigh = ${show l.memoryHigh}: use a size such as \"8G\", a percentage such as \"60%\", \"infinity\" or null.";
    }
    {
      assertion = l.memoryMax == null || matches memoryRe l.memoryMax;
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

  agentChecks =
    n:
    concatMap (
      name:
      let
        a = n.agents.${name};
        path = "${prefix}.agents.${show name}";
      in
      [
        {
          assertion = matches nameRe name;
          message = "${path}: agent names use letters, digits, '_' and '-' (at most 64).";
        }
        {
          assertion =
            a.command != "" && noNewline a.command && (hasPrefix "/" a.command || match ".*/.*" a.command == null);
          message = "${path}.command = ${show a.command}: name an executable in the package's bin/ (no '/'), or give an absolute path.";
        }
        {
          assertion = a.resumeArgs == [ ] || builtins.any (prim.contains idPlaceholder) a.resumeArgs;
          message = "${path}.resumeArgs = ${show a.resumeArgs}: name the conversation as ${idPlaceholder} (for example [ \"--resume\" \"${idPlaceholder}\" ]), or use [ ] for an agent that does not resume.";
        }
        {
          assertion = a.newArgs == [ ] || builtins.any (prim.contains idPlaceholder) a.newArgs;
          message = "${path}.newArgs = ${show a.newArgs}: name the new conversation's id as ${idPlaceholder}, or use [ ] when the agent chooses its own.";
        }
        {
          assertion = a.promptArgs == [ ] || builtins.any (prim.contains promptPlaceholder) a.promptArgs;
          message = "${path}.promptArgs = ${show a.promptArgs}: name the prompt as ${promptPlaceholder} (for example [ \"--\" \"${promptPlaceholder}\" ]), or use [ ] for an agent without a kickoff prompt.";
        }
        {
          # A package without a version (a wrapper) is taken as it is.
          assertion =
            a.setup != "claude" || builtins.compareVersions (a.package.version or claudeMinVersion) claudeMinVersion >= 0;
          message = "${path}.package is Claude Code ${a.package.version or "?"}; the \"claude\" setup needs ${claudeMinVersion} or newer (its --permission-mode, --session-id and --resume, and the managed-settings.d directory): use a newer claude-code, or set ${path}.setup = null and its resumeArgs, newArgs and promptArgs to [ ] to run it bare.";
        }
      ]
    ) (attrNames n.agents);

  environmentChecks =
    path: u:
    envChecks.variables path reservedVariable
      "PATH, HOME, USER and AGENT_BOX_* are set by agent-box; add programs with services.agent-box.extraPackages instead of PATH"
      "put it in an environmentFiles file or the user's ~/.config/agent-box/env"
      u.environment;

  userChecks =
    n:
    concatMap (
      name:
      let
        u = n.users.${name};
        path = "${prefix}.users.${show name}";
      in
      [
        {
          assertion = matches contract.names.user.pattern name;
          message = "${path}: user names must match ${contract.names.user.pattern} (lowercase, at most 32 characters).";
        }
      ]
      ++ sessionChecks n path u
      ++ map (a: {
        assertion = hasAttr a n.agents;
        message = "${path}.agents contains ${show a}: no such agent; define services.agent-box.agents.${show a} or remove it.";
      }) u.extraAgents
      ++ environmentChecks path u
      ++ envChecks.files path u.environmentFiles
      ++ limitChecks path u
      ++ [
        {
          assertion = u.diskQuota == null || matches contract.diskQuota.pattern u.diskQuota;
          message = "${path}.diskQuota = ${show u.diskQuota}: use a size such as \"20G\" (${contract.diskQuota.pattern}: M, G or T, powers of 1024) or null.";
        }
        {
          assertion = u.tasksMax == null || u.tasksMax < 1 || u.tasksMax >= 2 * tasksReserve;
          message = "${path}.tasksMax = ${toString u.tasksMax}: agent-box keeps ${toString tasksReserve} of a user's tasks from its agents for the user's supervisor, web daemon and terminal; use at least ${toString (2 * tasksReserve)} or null.";
        }
      ]
      ++ appChecks path u
    ) n.userNames;

  # n: the normalized options; caddyGroup: services.caddy.group (the web
  # checks refuse agent users in it).
  assertions =
    n: caddyGroup:
    [
      {
        assertion = hasAttr n.defaultAgent n.agents;
        message = "${prefix}.defaultAgent = ${show n.defaultAgent}: no such agent; use one of ${show (attrNames n.agents)}.";
      }
    ]
    ++ agentChecks n
    ++ userChecks n
    ++ limitChecks "${prefix}.slice" n.slice
    ++ [
      {
        assertion = n.slice.memoryHigh == null;
        message = "${prefix}.slice.memoryHigh = ${show n.slice.memoryHigh}: a MemoryHigh of the box's slice throttles every user's supervisor and tmux server, not the agent that uses the memory; remove it and set ${prefix}.slice.memoryMax, at which the kernel kills that agent.";
      }
    ]
    ++ attentionChecks n
    ++ webChecks n caddyGroup
    ++ appOriginChecks n;
in
{
  inherit assertions;

  # The messages of the failed assertions.
  failures = n: caddyGroup: map (a: a.message) (filter (a: !a.assertion) (assertions n caddyGroup));

  # The one check the glue evaluates itself (it reads users.users, which the
  # lib cannot see); its wording lives here with every other message.
  homeMessage =
    name: home:
    "${prefix}.users.${name}: users.users.${name}.home is ${home}, but ${prim.forUser contract.units.supervisor ""} uses /home/${name}; remove the home override.";
}
