# Small list and string helpers the other lib files share (builtins only).
{ contract, ... }:
let
  inherit (builtins)
    concatLists
    elem
    foldl'
    map
    sort
    stringLength
    substring
    toJSON
    ;
in
{
  concatMap = f: l: concatLists (map f l);
  # A drop-in for listToAttrs (units.nix, web-units.nix): unit name ->
  # { text; wantedBy; }.
  dropinEntry = name: text: wantedBy: {
    inherit name;
    value = { inherit text wantedBy; };
  };
  unique = foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ];
  sortStrings = sort (a: b: a < b);
  # Whether s is a string that the regular expression re matches whole.
  matches = re: s: builtins.isString s && builtins.match re s != null;
  # Whether s holds no line break (a unit file cannot carry one).
  noNewline = s: builtins.match ".*[\n\r].*" s == null;
  # Whether s holds needle.
  contains = needle: s: builtins.replaceStrings [ needle ] [ "" ] s != s;

  hasPrefix = p: s: substring 0 (stringLength p) s == p;
  # Drops the leading "/" of an absolute path.
  relative = p: substring 1 (stringLength p) p;
  # Quotes and escapes a value for a message.
  show = toJSON;
  # Names of sessions and agents (the contract; registry.CheckName).
  nameRe = contract.names.session.pattern;
  # A template of the contract (a path, unit or route holding "<user>")
  # for user u.
  forUser = template: u: builtins.replaceStrings [ "<user>" ] [ u ] template;
  # The slice of user u (contract.units.userSlice). In a slice's name '-'
  # means "child of": systemd-escape turns a user's '-' into \x2d (the only
  # character of contract.names.user it escapes), so that bob-x's slice is
  # never a child of bob's.
  userSlice =
    u: builtins.replaceStrings [ "<user>" ] [ (builtins.replaceStrings [ "-" ] [ "\\x2d" ] u) ] contract.units.userSlice;
  # The agent's events setup installs attention hooks for: the keys of
  # contract.attention.agentEvents.<setup>.events without their ":detail",
  # sorted (attention.HookEvents in the runtime).
  attentionHooks =
    setup:
    sort (a: b: a < b) (
      foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ] (
        map (k: builtins.head (builtins.split ":" k)) (
          builtins.attrNames contract.attention.agentEvents.${setup}.events
        )
      )
    );
}
