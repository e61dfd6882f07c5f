# The built-in agents' profile table (builtins only): each agent is one
# file of agents/ (its profile and its host-wide files), listed in
# default.nix's agentDefs.
{ agentDefs, ... }:
let
  builtinAgents = builtins.mapAttrs (_: a: a.profile) agentDefs;
in
{
  # name -> { packageAttr (the nixpkgs attribute); command; args;
  # resumeArgs; newArgs; promptArgs; setup; }. Their
  # attributes are the option defaults of services.agent-box.agents.<name>
  # (options.nix); the names are defined by the module (`definitions`).
  inherit builtinAgents;

  # What the module itself defines under services.agent-box: every built-in
  # agent exists, whatever else a host defines.
  definitions.agents = builtins.mapAttrs (_: _: { }) builtinAgents;
}
