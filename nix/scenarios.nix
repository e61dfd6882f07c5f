# Reads the scenario interface both VM tiers share (tests/scenarios/phases
# and tests/scenarios/requirements). Builtins only, so internal/flakecheck
# can evaluate it offline and compare it with its own reading of the files.
#
#   import ./scenarios.nix ../tests/scenarios
#   => {
#        phases = [ { name = "sessions"; config = "hostile"; crash = false; } ... ];
#        tests = { sessions = [ <phase> ]; durability = [ <pre> <post> ]; ... };
#        requirements = [ "bashInteractive" ... ];  # nixpkgs attributes
#        demoLogins = [ { name = "ops"; hash = "$pbkdf2-sha256$..."; } ... ];
#        demoHooks = [ { file = "alice-ci.hook"; secret = "..."; } ... ];
#      }
#
# A VM test groups the phases that share the name before the first "." (so
# durability.pre and durability.post are one test that boots the same disk
# twice), in file order.
dir:
let
  inherit (builtins)
    elemAt
    filter
    foldl'
    head
    isString
    length
    listToAttrs
    map
    match
    readFile
    split
    ;

  # Non-empty, non-comment lines, each split at runs of blanks.
  records =
    file:
    map (line: filter (f: isString f && f != "") (split "[ \t]+" line)) (
      filter (line: isString line && match "[ \t]*(#.*)?" line == null) (split "\n" (readFile file))
    );

  phase =
    r:
    let
      n = length r;
      flags = if n > 2 then builtins.genList (i: elemAt r (i + 2)) (n - 2) else [ ];
      count = f: length (filter (x: x == f) flags);
    in
    if
      n >= 2
      && count "crash" <= 1
      && count "crash" == length flags
    then
      {
        name = head r;
        config = elemAt r 1;
        crash = count "crash" == 1;
      }
    else
      throw "tests/scenarios/phases: bad line '${toString r}' (want PHASE GOLDEN-CONFIG [crash])";

  phases = map phase (records (dir + "/phases"));

  testOf = p: head (split "\\." p.name);

  # Test names in order of first appearance.
  testNames = foldl' (acc: p: if builtins.elem (testOf p) acc then acc else acc ++ [ (testOf p) ]) [ ] phases;

  requirement =
    r:
    if length r == 2 then
      elemAt r 1
    else
      throw "tests/scenarios/requirements: bad line '${toString r}' (want DEBIAN-PACKAGE NIXPKGS-ATTRIBUTE)";
in
{
  inherit phases;
  tests = listToAttrs (
    map (t: {
      name = t;
      value = filter (p: testOf p == t) phases;
    }) testNames
  );
  requirements = map requirement (records (dir + "/requirements"));
  # The web golden's logins (tests/scenarios/demo-logins: LOGIN PASSWORD
  # HASH); the VM installs each hash where the golden's login reads it.
  demoLogins = map (
    r:
    if length r == 3 then
      {
        name = head r;
        hash = elemAt r 2;
      }
    else
      throw "tests/scenarios/demo-logins: bad line (want LOGIN PASSWORD HASH)"
  ) (records (dir + "/demo-logins"));
  # The web golden's webhook secrets (tests/scenarios/demo-hooks: FILE
  # SECRET); the VM installs each under /etc/agent-box-demo/.
  demoHooks = map (
    r:
    if length r == 2 then
      {
        file = head r;
        secret = elemAt r 1;
      }
    else
      throw "tests/scenarios/demo-hooks: bad line (want FILE SECRET)"
  ) (records (dir + "/demo-hooks"));
  # The web golden's notify URLs (tests/scenarios/demo-notify: LOGIN URL);
  # the VM installs each where the golden's login reads it.
  demoNotify = map (
    r:
    if length r == 2 then
      {
        name = head r;
        url = elemAt r 1;
      }
    else
      throw "tests/scenarios/demo-notify: bad line (want LOGIN URL)"
  ) (records (dir + "/demo-notify"));
}
