# The formats the runtime checks too (contract.formats), as builtins-only
# predicates: the box's domain, Go durations (with their seconds), and the
# paths of root-only files handed over as credentials.
{ contract, prim, ... }:
let
  inherit (builtins)
    filter
    head
    match
    ;
  inherit (prim) hasPrefix;

  # "host[:port]" -> { host; port; } (port null when absent). It only
  # splits: validDomain says whether the domain is one.
  splitDomain =
    d:
    let
      m = match "([a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:([0-9]{1,5}))?" d;
    in
    if m == null then
      null
    else
      {
        host = head m;
        port = builtins.elemAt m 3;
      };

  durationRe = contract.formats.duration.pattern;
  domainFormat = contract.formats.domain;
  # The domain as the runtime checks it (contract.CheckDomain).
  validDomain =
    d:
    let
      s = splitDomain d;
    in
    match domainFormat.pattern d != null
    && builtins.stringLength s.host <= domainFormat.maxHostLength
    && (
      s.port == null
      || (
        let
          p = builtins.fromJSON s.port;
        in
        p <= domainFormat.maxPort && p != domainFormat.defaultPort
      )
    );

  # A duration setting of at least min (a Go duration).
  atLeast =
    min: d:
    let
      s = durationSeconds d;
    in
    s != null && s >= durationSeconds min;

  # A duration durationRe accepts, up to the format's max -> its seconds (a
  # float or an int); null for anything else.
  durationSeconds =
    d:
    let
      s = rawSeconds d;
    in
    if s == null || s > rawSeconds contract.formats.duration.max then null else s;
  rawSeconds =
    d:
    let
      unit = {
        h = 3600;
        m = 60;
        s = 1;
        ms = 1.0e-3;
      };
    in
    if match durationRe d == null then
      null
    else
      builtins.foldl' (acc: c: acc + number (head c) (builtins.elemAt c 1) * unit.${builtins.elemAt c 2}) 0 (
        filter builtins.isList (builtins.split "0*([0-9]+)(\\.[0-9]+)?(ms|h|m|s)" d)
      );
  # "5" ".25" -> 5.25 (JSON numbers have no leading zeros: those are gone).
  number = int: frac: builtins.fromJSON (int + (if frac == null then "" else frac));
  # fail2ban's times: seconds, or counts with s, m, h, d, w.
  banTimeRe = "[0-9]+|([0-9]+(s|m|h|d|w))+";

  # A root-only file systemd hands over as a credential: absolute, outside
  # the world-readable store, and without what LoadCredential= cannot hold.
  secretPath = p: hasPrefix "/" p && !hasPrefix "/nix/store/" p && match ".*[\n\r:].*" p == null;

  # A memory limit of a unit (MemoryHigh=, MemoryMax=): a size with K, M, G
  # or T suffix, a percentage, or infinity.
  memoryRe = "([0-9]+[KMGT]?|[0-9]+(\\.[0-9]+)?%|infinity)";
in
{
  inherit
    atLeast
    banTimeRe
    domainFormat
    durationSeconds
    memoryRe
    secretPath
    splitDomain
    validDomain
    ;
}
