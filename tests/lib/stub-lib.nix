# A small, builtins-only stand-in for the parts of nixpkgs' `lib` that
# modules/src/options.nix uses. Test code, never shipped: the offline suite
# applies the module's own option declarations to it (tests/lib/offline.nix),
# so the goldens, the lib's table cases and the option reference all
# come from the declarations NixOS reads, with no second copy of them.
#
# What it models:
# - mkOption, mkEnableOption, literalExpression, literalMD, optionalAttrs;
# - types bool, str, int, package, enum, nullOr, listOf, attrsOf and submodule (a
#   module `{ options = ...; }` or a function of `{ name, ... }` returning
#   one), each with the description NixOS prints and a check;
# - evalOptions: merges a list of definitions (one attribute set per module
#   that defines values) against the declarations: an option nobody defines
#   takes its default (or throws "accessed but has no value defined" when read); lists
#   concatenate in order; attribute sets merge by name; submodules merge
#   option by option; any other value must be defined once, or equally
#   everywhere; an unknown name or a value of the wrong type throws with the
#   start of NixOS's own message;
# - optionDocs: the declarations as a flat, sorted list for documentation,
#   with submodules under "<name>" as the NixOS manual shows them.
#
# What it does NOT model, so offline configurations must stay without it:
# priorities (mkDefault, mkForce, mkOverride, mkOptionDefault: every
# definition is a plain value), mkMerge, mkIf, mkBefore/mkAfter and mkOrder
# inside option values, `apply`, `readOnly`, `visible`, `internal`, every
# other type (ints.*, path, either, coercedTo, ...), freeform modules,
# `imports` or `config` inside submodules, `_module.args`, and the laziness of
# NixOS's checks (it reports an unknown name as soon as the attribute set
# holding it is read).
let
  inherit (builtins)
    all
    attrNames
    concatLists
    concatStringsSep
    filter
    head
    isAttrs
    isBool
    isFunction
    isInt
    isList
    isString
    length
    map
    mapAttrs
    match
    sort
    zipAttrsWith
    ;

  # showOption: path elements joined by ".", quoted unless identifiers.
  showOption =
    loc:
    concatStringsSep "." (
      map (p: if match "[A-Za-z_][A-Za-z0-9_'-]*|<name>" p != null then p else "\"${p}\"") loc
    );

  mkType =
    t:
    {
      _type = "option-type";
      descriptionClass = null;
      merge = mergeEqual;
    }
    // t;

  # Description of an inner type, parenthesised unless its class allows it.
  phrase = ok: t: if ok t.descriptionClass then t.description else "(${t.description})";

  mergeEqual =
    loc: defs:
    if all (d: d == head defs) defs then
      head defs
    else
      throw "The option `${showOption loc}' has conflicting definition values.";

  mergeOne =
    loc: defs:
    if length defs == 1 then
      head defs
    else
      throw "The unique option `${showOption loc}' is defined multiple times.";

  # Type-checks every definition of the option at loc, then merges them.
  valueOf =
    type: loc: defs:
    type.merge loc (
      map (
        d:
        if type.check d then
          d
        else
          throw "A definition for option `${showOption loc}' is not of type `${type.description}'."
      ) defs
    );

  # A submodule's option set for one attribute name.
  optionsOf =
    module: name:
    let
      m = if isFunction module then module { inherit name; } else module;
    in
    m.options;

  # The value of an option set for a list of definitions (attribute sets).
  evalSet =
    loc: options: defs:
    let
      unknown = concatLists (map (d: filter (k: !(options ? ${k})) (attrNames d)) defs);
      value = mapAttrs (
        name: opt:
        let
          here = loc ++ [ name ];
          given = map (d: d.${name}) (filter (d: d ? ${name}) defs);
        in
        if given != [ ] then
          valueOf opt.type here given
        else if opt ? default then
          valueOf opt.type here [ opt.default ]
        else
          throw "The option `${showOption here}' was accessed but has no value defined. Try setting the option."
      ) options;
    in
    if unknown != [ ] then
      throw "The option `${showOption (loc ++ [ (head unknown) ])}' does not exist."
    else
      value;

  types = {
    bool = mkType {
      name = "bool";
      description = "boolean";
      descriptionClass = "noun";
      check = isBool;
    };
    str = mkType {
      name = "str";
      description = "string";
      descriptionClass = "noun";
      check = isString;
    };
    int = mkType {
      name = "int";
      description = "signed integer";
      descriptionClass = "noun";
      check = isInt;
    };
    package = mkType {
      name = "package";
      description = "package";
      descriptionClass = "noun";
      check = v: isAttrs v && v.type or null == "derivation";
      merge = mergeOne;
    };
    enum =
      values:
      mkType {
        name = "enum";
        description = "one of ${concatStringsSep ", " (map builtins.toJSON values)}";
        descriptionClass = if length values < 2 then "noun" else "conjunction";
        check = v: builtins.elem v values;
      };
    nullOr =
      elemType:
      mkType {
        name = "nullOr";
        description = "null or ${phrase (c: c == "noun" || c == "conjunction") elemType}";
        descriptionClass = "conjunction";
        check = v: v == null || elemType.check v;
        merge =
          loc: defs:
          let
            nonNull = filter (d: d != null) defs;
          in
          if nonNull == [ ] then
            null
          else if length nonNull == length defs then
            elemType.merge loc defs
          else
            throw "The option `${showOption loc}' is defined both null and not null.";
        nested = elemType;
      };
    listOf =
      elemType:
      mkType {
        name = "listOf";
        description = "list of ${phrase (c: c == "noun" || c == "composite") elemType}";
        descriptionClass = "composite";
        check = isList;
        merge =
          loc: defs:
          concatLists (map (l: map (e: valueOf elemType (loc ++ [ "[entry]" ]) [ e ]) l) defs);
        nested = elemType;
      };
    attrsOf =
      elemType:
      mkType {
        name = "attrsOf";
        description = "attribute set of ${phrase (c: c == "noun" || c == "composite") elemType}";
        descriptionClass = "composite";
        check = isAttrs;
        merge = loc: defs: zipAttrsWith (name: vs: valueOf elemType (loc ++ [ name ]) vs) defs;
        nested = elemType;
      };
    submodule =
      module:
      mkType {
        name = "submodule";
        description = "submodule";
        check = isAttrs;
        merge = loc: defs: evalSet loc (optionsOf module (builtins.elemAt loc (length loc - 1))) defs;
        subOptions = optionsOf module "<name>";
      };
  };

  mkOption =
    attrs:
    {
      _type = "option";
      description = null;
    }
    // attrs;
in
{
  inherit types mkOption;

  mkEnableOption =
    name:
    mkOption {
      type = types.bool;
      default = false;
      example = true;
      description = "Whether to enable ${name}.";
    };

  literalExpression = text: {
    _type = "literalExpression";
    inherit text;
  };

  literalMD = text: {
    _type = "literalMD";
    inherit text;
  };

  optionalAttrs = cond: attrs: if cond then attrs else { };

  # { prefix = [ "services" "agent-box" ]; options; definitions = [ ... ]; }
  # -> the configuration under prefix, as `config.services.agent-box` is.
  evalOptions =
    {
      prefix,
      options,
      definitions,
    }:
    evalSet prefix options definitions;

  # The declarations as documentation entries, sorted by path:
  # { loc; type; description; default?; defaultText?; example?; }
  # (default, defaultText and example as declared: values or literals).
  optionDocs =
    prefix: options:
    let
      walk =
        loc: opts:
        concatLists (
          map (
            name:
            let
              opt = opts.${name};
              here = loc ++ [ name ];
              t = opt.type;
              below =
                if t.name == "submodule" then
                  walk here t.subOptions
                else if (t.name == "attrsOf" || t.name == "listOf") && t.nested.name == "submodule" then
                  walk (here ++ [ (if t.name == "attrsOf" then "<name>" else "*") ]) t.nested.subOptions
                else
                  [ ];
            in
            [
              (
                {
                  loc = showOption here;
                  type = t.description;
                  inherit (opt) description;
                }
                // builtins.intersectAttrs {
                  default = null;
                  defaultText = null;
                  example = null;
                } opt
              )
            ]
            ++ below
          ) (sort (a: b: a < b) (attrNames opts))
        );
    in
    walk prefix options;
}
