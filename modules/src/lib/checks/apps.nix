# The checks of the apps of one user (services.agent-box.users.<u>.apps):
# path is the user's option path, u a normalized user. The limits come from
# the contract.
{
  prim,
  formats,
  envChecks,
  contract,
  ...
}:
let
  inherit (builtins) match;
  inherit (prim)
    concatMap
    hasPrefix
    matches
    noNewline
    show
    ;
  inherit (formats) memoryRe;

  # Variables agent-box sets for an app; the app's environment may not
  # override them.
  appReserved =
    name:
    builtins.elem name [
      "PATH"
      contract.apps.portVariable
      "STATE_DIRECTORY"
    ]
    || hasPrefix "AGENT_BOX_" name;
in
path: u:
concatMap (
  a:
  let
    where = "${path}.apps.${show a.name}";
    delay = formats.durationSeconds a.restartDelay;
    delayMax = formats.durationSeconds a.restartDelayMax;
  in
  [
    {
      assertion = matches contract.names.app.pattern a.name;
      message = "${where}: ${contract.names.app.what}.";
    }
    {
      assertion = a.command != [ ] && builtins.head a.command != "" && builtins.all noNewline a.command;
      message = "${where}.command = ${show a.command}: give the program and its arguments as a list, such as [ \"python3\" \"app.py\" ] (no newlines).";
    }
    {
      assertion = a.waitFor == null || (noNewline a.waitFor && match ".*(^|/)\\.\\.(/.*|$)" a.waitFor == null);
      message = "${where}.waitFor = ${show a.waitFor}: use a path without .. elements (relative to the app's directory, or absolute).";
    }
    {
      assertion = delay != null && delay >= formats.durationSeconds contract.apps.restartDelay.min;
      message = "${where}.restartDelay = ${show a.restartDelay}: use a Go duration of at least ${contract.apps.restartDelay.min}, such as \"1s\".";
    }
    {
      assertion = delay == null || (delayMax != null && delayMax >= delay);
      message = "${where}.restartDelayMax = ${show a.restartDelayMax}: use a Go duration of at least restartDelay (${a.restartDelay}), such as \"1m\".";
    }
    {
      assertion = a.memoryMax == null || matches memoryRe a.memoryMax;
      message = "${where}.memoryMax = ${show a.memoryMax}: use a size such as \"1G\", a percentage such as \"10%\", \"infinity\" or null.";
    }
    {
      assertion = a.tasksMax == null || a.tasksMax >= 1;
      message = "${where}.tasksMax = ${toString a.tasksMax}: use a positive number or null.";
    }
  ]
  ++ envChecks.variables where appReserved
    "PATH, ${contract.apps.portVariable}, STATE_DIRECTORY and AGENT_BOX_* are set by agent-box; add programs with packages instead of PATH"
    "put it in an environmentFiles file"
    a.environment
  ++ envChecks.files where a.environmentFiles
) u.apps
