# Check `assertions`: configurations that must not build fail with the
# module's documented messages, and with nothing else.
#
# Only config.assertions is evaluated (never toplevel, which would abort
# evaluation with the first message): each case's failing messages are
# compared with the exact expected list. The comparison happens at
# evaluation time inside builtins.tryEval, so `nix flake check` always
# evaluates this check; a mismatch or a thrown error (what module-system
# errors and failed asserts are) makes the build fail and print both sides.
# tryEval cannot catch other evaluation errors (a missing attribute, say):
# those still abort `nix flake check`, with their own message.
{
  lib,
  pkgs,
  nixos,
  module,
}:

let
  inherit (builtins) deepSeq filter toJSON tryEval;
  inherit (lib) concatMapStrings escapeShellArg mkForce;

  cases = import ./assertion-cases.nix { inherit mkForce; };

  failures =
    case:
    let
      config =
        (nixos [
          module
          { services.agent-box.enable = true; }
          case.config
        ]).config;
      messages = map (a: a.message) (filter (a: !a.assertion) config.assertions);
      result = tryEval (deepSeq messages messages);
    in
    if result.success then result.value else [ "<config.assertions did not evaluate>" ];

  results = map (case: case // { got = failures case; }) cases;
  report = concatMapStrings (
    r:
    if r.got == r.expected then
      "ok - ${r.name}\n"
    else
      "not ok - ${r.name}\n  expected: ${toJSON r.expected}\n  got:      ${toJSON r.got}\n"
  ) results;
  ok = lib.all (r: r.got == r.expected) results;
in
pkgs.runCommand "agent-box-assertions" { } ''
  printf '%s' ${escapeShellArg report}
  ${if ok then "touch $out" else "exit 1"}
''
