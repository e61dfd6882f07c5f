# The agents table AGENT_BOX_AGENTS of a normalized user: its agents, each
# command resolved inside the user's environment envPath unless absolute
# (docs/runtime-contract.md, "Agents table").
{ prim, ... }:
n: u: envPath:
builtins.toJSON (
  builtins.listToAttrs (
    map (name: {
      inherit name;
      value = {
        command =
          let
            c = n.agents.${name}.command;
          in
          if prim.hasPrefix "/" c then c else "${envPath}/bin/${c}";
        inherit (n.agents.${name}) args;
      };
    }) u.agentNames
  )
)
+ "\n"
