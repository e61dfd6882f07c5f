# A user's webhooks (docs/web-contract.md, "Webhooks"): the configuration
# the web daemon reads, and the body size Caddy lets through.
# w: the normalized web settings.
{ ... }:
let
  inherit (builtins) listToAttrs map toJSON;
in
{
  # The hooks' configuration of user u (AGENT_BOX_HOOKS; no secret in it).
  config =
    w: u:
    toJSON {
      concurrency = w.webhookConcurrency;
      hooks = listToAttrs (
        map (h: {
          inherit (h) name;
          value = {
            inherit (h) session notify maxBodySize quota retention;
          };
        }) w.hooks.${u}
      );
    }
    + "\n";

  # What Caddy lets through to a user's hook listener: the largest body of
  # the user's hooks and room for the daemon's own 413.
  bodyCap = hs: 65536 + builtins.foldl' (m: h: if h.maxBodySize > m then h.maxBodySize else m) 0 hs;
}
