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
        # The permission mode (services.agent-box.claude.permissionMode)
        # goes first, so an agent's own args can still override it.
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
