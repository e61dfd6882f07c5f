# The checks every environment an option sets shares (a user's, an app's):
# variable names, the variables agent-box sets itself, values a unit file
# can carry, and EnvironmentFile= paths. path is the option path of the
# environment's owner.
{ prim, ... }:
let
  inherit (builtins) match;
  inherit (prim)
    concatMap
    matches
    noNewline
    show
    ;
in
{
  # env: [ { name; value; } ]; reserved: name -> whether agent-box sets it;
  # reservedText: which those are and what to do instead; newlineFix:
  # where a value with a newline can go.
  variables =
    path: reserved: reservedText: newlineFix: env:
    concatMap (e: [
      {
        assertion = matches "[A-Za-z_][A-Za-z0-9_]*" e.name;
        message = "${path}.environment.${show e.name}: variable names must match [A-Za-z_][A-Za-z0-9_]*.";
      }
      {
        assertion = !reserved e.name;
        message = "${path}.environment.${show e.name}: ${reservedText}.";
      }
      {
        assertion = noNewline e.value;
        message = "${path}.environment.${show e.name}: the value contains a newline, which a unit file cannot carry; ${newlineFix}.";
      }
    ]) env;

  files =
    path:
    map (f: {
      assertion = match "-?/.*" f != null && noNewline f;
      message = "${path}.environmentFiles contains ${show f}: use an absolute path (prefix '-' to ignore a missing file).";
    });
}
