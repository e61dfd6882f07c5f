# A plain shell, the built-in agent `shell` (bash): no conversation to
# keep, no setup, no host-wide files.
{ ... }:
{
  profile = {
    packageAttr = "bashInteractive";
    command = "bash";
    args = [ ];
    resumeArgs = [ ];
    newArgs = [ ];
    promptArgs = [ ];
    setup = null;
  };

  files = _runtime: _guide: { };
}
