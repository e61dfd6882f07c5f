# Caddy's sites of the apps' origins (docs/web-contract.md, "Caddy"): one
# per app of a user with a web origin, `<label>.<appsDomain>`, to the app's
# socket. A public app is reached by anyone; any other sits behind
# forward_auth, its /auth/* the auth service's. Only the box's own
# cookies are removed before the app. w: the normalized web settings.
{
  contract,
  render,
  ...
}:
let
  inherit (builtins)
    concatStringsSep
    map
    match
    ;
  inherit (contract) headers routes sockets;
  inherit (render.caddy.parts) keepCookies prefixLines tlsLine toPages;
  cookies = contract.cookies;

  # Every box cookie ("name=value" pair of the Cookie header) becomes ";":
  # the app gets every other cookie, its own included. Never an empty
  # replacement: Caddy would take the line for a set.
  checked =
    n: if match "[A-Za-z0-9_-]+" n != null then n else throw "agent-box: cookie name ${n} needs regexp escaping";
  dropBoxCookies = "header_up Cookie \"(?:^|;) *(?:${checked cookies.session}|${checked cookies.bind})=[^;]*\" \";\"";

  toApp = a: ''
    reverse_proxy unix/${a.socket} {
    	${dropBoxCookies}
    }
  '';

  # HSTS with ACME (as the box's origins have it); no Cache-Control: the
  # app decides what may be cached.
  hsts = tls: if tls == "acme" then "\theader Strict-Transport-Security \"max-age=31536000\"\n" else "";

  site =
    w: a:
    "\n${a.host} {\n"
    + tlsLine w.tls
    + hsts w.tls
    + (
      if a.public then
        prefixLines "\t" (toApp a)
      else
        "\thandle ${routes.authPages.path} {\n"
        + prefixLines "\t" (toPages [
          cookies.session
          cookies.bind
        ])
        + ''
          	}
          	handle {
          		route {
          			forward_auth unix/${sockets.authVerify.path} {
          				uri ${routes.verify.path}?user=${a.user}&app=${a.name}
          				${keepCookies [ cookies.session ]}
          				header_up ${headers.client} {remote_host}
          			}
        ''
        + prefixLines "\t\t\t" (toApp a)
        + "\t\t}\n\t}\n"
    )
    + "}\n";
in
{
  inherit dropBoxCookies;
  sites = w: concatStringsSep "" (map (site w) w.apps);
}
