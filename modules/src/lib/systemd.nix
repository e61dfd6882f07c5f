# Escaping and common lines for systemd unit files (builtins only).
{ ... }:
rec {
  # "%" starts a specifier in unit files; "%%" is a literal percent.
  escapeSpecifiers = builtins.replaceStrings [ "%" ] [ "%%" ];

  # Inside double quotes systemd C-unescapes a value: a backslash or a
  # double quote must be escaped, then specifiers. Newlines cannot be
  # carried (validation rejects them before rendering).
  quote = s: "\"" + escapeSpecifiers (builtins.replaceStrings [ "\\" "\"" ] [ "\\\\" "\\\"" ] s) + "\"";

  # One argument of an Exec line, quoted: "$" would start a variable there,
  # "$$" is a literal dollar.
  execArg = s: quote (builtins.replaceStrings [ "$" ] [ "$$" ] s);

  # One Environment= line for NAME=VALUE.
  environmentLine = name: value: "Environment=${quote "${name}=${value}"}\n";

  # A directive line with a value that must not expand specifiers.
  line = key: value: "${key}=${escapeSpecifiers (toString value)}\n";

  # The resource-control lines of a unit, from { cpuWeight; memoryHigh;
  # memoryMax; tasksMax; }: one line per limit that is not null.
  limits =
    l:
    let
      limit = k: v: if v == null then "" else "${k}=${toString v}\n";
    in
    limit "CPUWeight" l.cpuWeight
    + limit "MemoryHigh" l.memoryHigh
    + limit "MemoryMax" l.memoryMax
    + limit "TasksMax" l.tasksMax;
}
