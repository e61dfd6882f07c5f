# Small list and string helpers the other lib files share (builtins only).
{ ... }:
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
  unique = foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ];
  sortStrings = sort (a: b: a < b);
  hasPrefix = p: s: substring 0 (stringLength p) s == p;
  # Drops the leading "/" of an absolute path.
  relative = p: substring 1 (stringLength p) p;
  # Quotes and escapes a value for a message.
  show = toJSON;
  # Names of sessions and agents (the runtime's registry.CheckName).
  nameRe = "[A-Za-z0-9_-]{1,64}";
}
