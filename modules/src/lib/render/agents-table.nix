# The agents table AGENT_BOX_AGENTS of a normalized user: its agents, each
# command resolved inside the user's environment envPath unless absolute
# (docs/runtime-contract.md, "Agents table").
{ prim, ... }:
n: u: envPath:
builtins.toJSON (
  builtins.listToAttrs (
    map (name: {
      inherit name;
      value =
        let
          a = n.agents.${name};
          optional = k: v: if v == [ ] then { } else { ${k} = v; };
        in
        {
        command =
          let
            c = n.agents.${name}.command;
          in
          if prim.hasPrefix "/" c then c else "${envPath}/bin/${c}";
        # The permission mode (services.agent-box.claude.permissionMode),
        # Codex's sandbox and approval policy (services.agent-box.codex)
        # go first, so an agent's own args can still override them.
        args =
          (
            if a.setup == "claude" && n.claude.permissionMode != null then
              [
                "--permission-mode"
                n.claude.permissionMode
              ]
            else
              [ ]
          )
          ++ (
            if a.setup == "codex" && n.codex.sandbox != null then
              [
                "--sandbox"
                n.codex.sandbox
              ]
            else
              [ ]
          )
          ++ (
            if a.setup == "codex" && n.codex.approvalPolicy != null then
              [
                "--ask-for-approval"
                n.codex.approvalPolicy
              ]
            else
              [ ]
          )
          ++ a.args;
      }
      // optional "resumeArgs" a.resumeArgs
      // optional "newArgs" a.newArgs
      // optional "promptArgs" a.promptArgs
      // (if a.setup == null then { } else { inherit (a) setup; });
    }) u.agentNames
  )
)
+ "\n"
