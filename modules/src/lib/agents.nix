# The built-in agents (builtins only).
{ contract, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
  # How an agent keeps its conversation (docs/runtime-contract.md,
  # "Conversations"): none, for those that do not yet.
  none = {
    resumeArgs = [ ];
    newArgs = [ ];
    promptArgs = [ ];
    setup = null;
  };
  builtinAgents = {
    shell = none // {
      packageAttr = "bashInteractive";
      command = "bash";
      args = [ ];
    };
    # Claude Code resumes a conversation by id, takes a new one's id up
    # front and the kickoff prompt as its last argument (after "--", so a
    # prompt starting with "-" is not an option); "claude" setup merges
    # ~/.claude.json before each spawn (measured with 2.1.328).
    claude = {
      packageAttr = "claude-code";
      command = "claude";
      args = [ ];
      resumeArgs = [
        "--resume"
        idPlaceholder
      ];
      newArgs = [
        "--session-id"
        idPlaceholder
      ];
      promptArgs = [
        "--"
        promptPlaceholder
      ];
      setup = "claude";
    };
    # Codex chooses its conversation's id (reported by its SessionStart
    # hook at the first turn) and resumes with a subcommand; the kickoff
    # prompt is its last argument, after "--". "codex" setup trusts the
    # session's folder on the command line of each spawn (measured with
    # 0.171.0).
    codex = {
      packageAttr = "codex";
      command = "codex";
      args = [ ];
      resumeArgs = [
        "resume"
        idPlaceholder
      ];
      newArgs = [ ];
      promptArgs = [
        "--"
        promptPlaceholder
      ];
      setup = "codex";
    };
    # OpenCode chooses its session's id (reported by agent-box's plugin in
    # its managed config when the session is created) and resumes it with
    # --session; the kickoff prompt is one "--prompt=..." argument (so a
    # prompt starting with "-" is not an option). "opencode" setup turns
    # off its network fetches for each spawn and resumes only while its
    # database holds the session (measured with 1.18.33).
    opencode = {
      packageAttr = "opencode";
      command = "opencode";
      args = [ ];
      resumeArgs = [ "--session=${idPlaceholder}" ];
      newArgs = [ ];
      promptArgs = [ "--prompt=${promptPlaceholder}" ];
      setup = "opencode";
    };
  };
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
