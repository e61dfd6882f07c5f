# The built-in agents (builtins only).
{ ... }:
let
  builtinAgents = {
    shell = {
      packageAttr = "bashInteractive";
      command = "bash";
      args = [ ];
    };
    claude = {
      packageAttr = "claude-code";
      command = "claude";
      args = [ ];
    };
    codex = {
      packageAttr = "codex";
      command = "codex";
      args = [ ];
    };
    opencode = {
      packageAttr = "opencode";
      command = "opencode";
      args = [ ];
    };
  };
in
{
  # name -> { packageAttr (the nixpkgs attribute); command; args; }. Their
  # attributes are the option defaults of services.agent-box.agents.<name>
  # (options.nix); the names are defined by the module (`definitions`).
  inherit builtinAgents;

  # What the module itself defines under services.agent-box: every built-in
  # agent exists, whatever else a host defines.
  definitions.agents = builtins.mapAttrs (_: _: { }) builtinAgents;
}
