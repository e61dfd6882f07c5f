# The seed file AGENT_BOX_SEED of a normalized user
# (docs/runtime-contract.md, "Seed").
{ ... }:
u:
builtins.toJSON {
  sessions = map (
    s:
    {
      inherit (s)
        name
        agent
        args
        cwd
        ;
    }
    // (if s.prompt == null then { } else { inherit (s) prompt; })
  ) u.sessions;
}
+ "\n"
