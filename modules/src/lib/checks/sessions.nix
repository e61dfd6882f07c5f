# The checks of a user's sessions (users.<name>.sessions), with the
# contract's session limits (internal/runtime/contract, "sessions"), which
# the runtime's registry enforces too: a seed the runtime would refuse is
# refused here, at evaluation, with the option and the fix.
{
  prim,
  contract,
  render,
  ...
}:
let
  inherit (builtins) foldl' hasAttr stringLength;
  inherit (prim)
    concatMap
    hasPrefix
    matches
    nameRe
    noNewline
    show
    ;
  lim = contract.sessions;
  # What args take of execve's ARG_MAX: each one's bytes, its NUL and a
  # pointer (the runtime's registry.ArgsSize).
  argsSize = foldl' (n: a: n + stringLength a + 1 + lim.argPointerBytes) 0;
  # The first argument over the limit, by position (1-based), or null.
  longArg =
    args:
    foldl' (
      found: i:
      if found == null && stringLength (builtins.elemAt args i) > lim.argMaxBytes then i + 1 else found
    ) null (builtins.genList (i: i) (builtins.length args));
in
n: path: u:
[
  {
    assertion = builtins.length u.sessions <= lim.max;
    message = "${path}.sessions has ${toString (builtins.length u.sessions)} sessions: at most ${toString lim.max}; start the others at run time with agent-box session add.";
  }
  {
    assertion = builtins.length u.sessions > lim.max || stringLength (render.seed u) <= lim.seedMaxBytes;
    message = "${path}.sessions: the seed file is ${toString (stringLength (render.seed u))} bytes: at most ${toString lim.seedMaxBytes}; shorten the prompts and arguments, or add sessions at run time.";
  }
]
++ concatMap (
  s:
  let
    long = longArg s.args;
  in
  [
    {
      assertion = matches nameRe s.name;
      message = "${path}.sessions.${show s.name}: session names must match ${nameRe}.";
    }
    {
      assertion = hasAttr s.agent n.agents;
      message = "${path}.sessions.${show s.name}.agent = ${show s.agent}: no such agent; define services.agent-box.agents.${show s.agent} or use one of ${show (builtins.attrNames n.agents)}.";
    }
    {
      assertion = s.prompt == null || stringLength s.prompt <= contract.conversations.promptMaxBytes;
      message = "${path}.sessions.${show s.name}.prompt is ${toString (stringLength (if s.prompt == null then "" else s.prompt))} bytes: at most ${toString contract.conversations.promptMaxBytes}; point the agent to a file instead.";
    }
    {
      assertion = hasPrefix "/" s.cwd && noNewline s.cwd;
      message = "${path}.sessions.${show s.name}.workingDirectory = ${show s.cwd}: use an absolute path.";
    }
    {
      assertion = stringLength s.cwd <= lim.cwdMaxBytes;
      message = "${path}.sessions.${show s.name}.workingDirectory is ${toString (stringLength s.cwd)} bytes: at most ${toString lim.cwdMaxBytes} (Linux's PATH_MAX less its NUL).";
    }
    {
      assertion = long == null;
      # (every message is evaluated, the passing ones too)
      message = "${path}.sessions.${show s.name}.args: argument ${toString long} is ${
        toString (if long == null then 0 else stringLength (builtins.elemAt s.args (long - 1)))
      } bytes: at most ${toString lim.argMaxBytes} (Linux's MAX_ARG_STRLEN less its NUL); pass a file instead.";
    }
    {
      assertion = long != null || argsSize s.args <= lim.argsMaxBytes;
      message = "${path}.sessions.${show s.name}.args take ${toString (argsSize s.args)} bytes: at most ${toString lim.argsMaxBytes}, each argument counted with its NUL and a pointer of ${toString lim.argPointerBytes} bytes, as execve counts it.";
    }
  ]
) u.sessions
