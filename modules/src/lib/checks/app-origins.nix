# The checks of the apps' origins, on the normalized options n (with or
# without the web surface): an app is reached only through the web
# surface; the apps' domain has the box domain's form; no app's origin is
# also a user's.
{ prim, formats, ... }:
let
  inherit (builtins) attrNames elem map;
  inherit (prim) concatMap show;
  inherit (formats) domainFormat validDomain;
  prefix = "services.agent-box.web";
in
n:
let
  w = n.web;
in
concatMap (
  u:
  if n.users.${u}.apps == [ ] then
    [ ]
  else
    [
      {
        assertion = w.enable && elem u w.users;
        message = "services.agent-box.users.${show u}.apps: apps are reached only through the web surface, each on its own origin: set ${prefix}.enable = true and name ${show u} in the users of a login under ${prefix}.logins.";
      }
    ]
) (attrNames n.users)
++ (
  if !w.enable then
    [ ]
  else
    [
      {
        assertion = !w.appsDomainSet || validDomain w.appsDomain;
        message = "${prefix}.appsDomain = ${show w.appsDomain}: use ${domainFormat.what} (for example \"apps.example.net\"), or null for the box's domain.";
      }
    ]
    ++ map (a: {
      assertion = w.appsDomain != w.domain || !elem a.label w.users;
      message = "services.agent-box.users.${show a.user}.apps.${show a.name}: its origin ${a.host} is also agent user ${show a.label}'s: set ${prefix}.appsDomain to another domain, or rename the app or the user.";
    }) w.apps
)
