#!/usr/bin/env bash
# Scenario "web" (golden configuration: web): the web surface in a real
# boot, through Caddy with its internal CA on box.localhost:8443. Logins
# "ops" (alice, bob) and "alice-only"; carol has no origin. Every socket's
# owner and mode; who can connect to what; what listens; cookies per origin;
# a terminal typed into; refused origins, headers, paths and hosts; a
# listener in place of alice's ttyd socket; logout, revoke and restarts; no
# secret in Caddy; no Caddy reload.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

# shellcheck source=weblib.sh
. "$here/weblib.sh"
work=$(mktemp -d)
# mode PATH OWNER:GROUP OCTAL
mode() {
  local got
  got=$(stat -c '%U:%G %a' "$1")
  if [ "$got" != "$2 $3" ]; then
    echo "$1: $got, want $2 $3"
    return 1
  fi
}
# connect USER SOCKET: USER (outside any unit, as from a login) connects.
connect() {
  as "$1" python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$2"
}
refused() { ! connect "$@"; }

# phase: the units are up
check "caddy is active" wait_until 120 systemctl is-active --quiet caddy.service
for s in verify pages status control; do
  check "agent-box-auth-$s.socket listens" wait_until 60 systemctl is-active --quiet "agent-box-auth-$s.socket"
done
for u in alice bob; do
  check "agent-box-web@$u.socket listens" wait_until 60 systemctl is-active --quiet "agent-box-web@$u.socket"
  check "agent-box-term@$u is active" wait_until 60 systemctl is-active --quiet "agent-box-term@$u.service"
  check "$u's seeded session main is live" wait_until 60 has_session "$u" main
done
check "carol, whom no login opens, has no web socket" test ! -e /run/agent-box-web/carol.sock
check "carol has no ttyd" test ! -e /run/agent-box-term/carol
# the agents' own address on loopback (the attacks scenario proves what it does)
agents_table() {
  systemctl is-active --quiet agent-box-clients.service &&
    nft list table inet agent-box-clients | grep -F 'meta skuid' | grep -q 'snat ip to' &&
    [ "$(systemctl show -P DynamicUser agent-box-clients.service)" = yes ] &&
    [ "$(systemctl show -P CapabilityBoundingSet agent-box-clients.service)" = cap_net_admin ]
}
check "agent-box-clients.service loaded the agents' table (as a user of its own, with CAP_NET_ADMIN only)" agents_table
note "systemd-analyze security agent-box-clients.service (systemd 257): $(systemd-analyze security agent-box-clients.service 2>/dev/null | sed -n 's/^→ Overall exposure level for [^:]*: //p')"

# phase: sockets, owners and modes
check "the auth directory is root's" mode /run/agent-box-auth root:root 755
check "verify.sock is root:caddy 0660" mode /run/agent-box-auth/verify.sock root:caddy 660
check "pages.sock is root:caddy 0660" mode /run/agent-box-auth/pages.sock root:caddy 660
status_group=$(systemctl show -P SocketGroup agent-box-auth-status.socket)
check "status.sock is root:$status_group 0660, a group of its own" mode /run/agent-box-auth/status.sock "root:$status_group" 660
own_group() {
  [ "$1" != root ] && ! id -nG alice bob carol | tr ' ' '\n' | grep -qx "$1"
}
check "... and not root's, nor one an agent user is in" own_group "$status_group"
check "control.sock is root:root 0600" mode /run/agent-box-auth/control.sock root:root 600
check "the web socket directory is root's" mode /run/agent-box-web root:root 755
for u in alice bob; do
  check "web/$u.sock is root:caddy 0660" mode "/run/agent-box-web/$u.sock" root:caddy 660
  check "$u's ttyd directory is hers alone (0700)" mode "/run/agent-box-term/$u" "$u:$(id -gn "$u")" 700
  check "$u's ttyd socket is in it" wait_until 30 test -S "/run/agent-box-term/$u/ttyd.sock"
done
check "Caddy's admin directory is caddy's alone (0700)" mode /run/caddy caddy:caddy 700

# How often the web daemons check the login sessions of open terminals:
# the golden's web.terminalCheckInterval, in whole seconds. The checks
# below that a revoked or expired login's terminal closes wait for it.
check_every=
check_interval() {
  check_every=$(systemctl show -P Environment agent-box-web@alice.service | tr ' ' '\n' |
    sed -n 's/^AGENT_BOX_WEB_CHECK_INTERVAL=\([1-9][0-9]*\)s$/\1/p')
  echo "AGENT_BOX_WEB_CHECK_INTERVAL: ${check_every:-not whole seconds or unset} s"
  [ -n "$check_every" ] && [ "$check_every" -le 10 ]
}
check "alice's web daemon checks open terminals' sessions every few seconds" check_interval
check_every=${check_every:-10} # after a failure: the most the check allows

# phase: who can connect to what
check "caddy can connect to alice's web socket (control)" connect caddy /run/agent-box-web/alice.sock
check "alice cannot connect to her own web socket (only Caddy may)" refused alice /run/agent-box-web/alice.sock
check "bob cannot connect to alice's web socket" refused bob /run/agent-box-web/alice.sock
for s in verify pages control; do
  check "alice cannot connect to the auth $s socket" refused alice "/run/agent-box-auth/$s.sock"
done
check "alice cannot connect to the status socket (only her supervisor and web daemon carry its group)" refused alice /run/agent-box-auth/status.sock
check "bob cannot connect to alice's ttyd" refused bob /run/agent-box-term/alice/ttyd.sock
check "alice cannot reach Caddy's admin socket" refused alice /run/caddy/admin.sock
tcp_only_8443() {
  local l
  l=$(ss -ltnH | awk '{print $4}' | sort -u)
  echo "$l"
  [ -n "$l" ] && ! grep -qv ':8443$' <<<"$l"
}
check "nothing listens on TCP but 8443" tcp_only_8443
no_udp() {
  local l
  l=$(ss -lunH)
  echo "$l"
  [ -z "$l" ]
}
check "nothing listens on UDP (no HTTP/3)" no_udp
no_tcp_admin() { ! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 2019), timeout=3)'; }
check "nothing answers on localhost:2019" no_tcp_admin

# phase: logins and origins
# How long one login's hash takes here (600,000 PBKDF2-HMAC-SHA256 rounds).
t0=$(now_ms)
printf 'x' | "$(agent_box_bin alice)" web hash-password >/dev/null
note "measure: one 600,000-round PBKDF2 hash: $(($(now_ms) - t0)) ms (emulated machine)"
ops=$work/ops.json ao=$work/alice-only.json none=$work/none.json
to_box_login() {
  local loc
  loc=$(client get "$none" "https://$A/" | sed -n 's/^header Location: //p')
  echo "Location: $loc"
  [[ "$loc" == "https://$D/auth/login?"* && "$loc" == *"user=alice"* ]]
}
check "no cookie: a navigation to alice's origin goes to the box login" to_box_login
check "no cookie: a fetch on alice's origin gets 401" status_is 401 "$none" "https://$A/" --fetch
check "a wrong password is refused" in_out "status 401" client login "$work/wrong.json" ops not-the-password
sleep 1.2 # past the login's first backoff (1 s from the refusal)
check "ops logs in and is handed over to alice" in_out "url https://$A/" client login "$ops" ops "$(password ops)" alice
check "alice's origin lists her session main" in_out 'main' client get "$ops" "https://$A/"
check "alice's origin serves the product's one stylesheet (the auth service's)" in_out "header Content-Type: text/css" client get "$ops" "https://$A/auth/style.css"
check "and its icon" in_out "header Content-Type: image/svg+xml" client get "$ops" "https://$A/auth/favicon.svg"
check "alice's web daemon serves the workspace (its libraries are installed)" in_out "header Content-Type: text/javascript" client get "$ops" "https://$A/assets/workspace.mjs"
check "ops opens bob from the box (no second password)" in_out "url https://$B/" client open "$ops" bob
check "alice-only logs in and opens alice" in_out "url https://$A/" client login "$ao" alice-only "$(password alice-only)" alice
check "alice-only has no way into bob's origin" status_is 401 "$ao" "https://$B/" --fetch
check "the box refuses to open bob for alice-only" status_is 403 "$ao" "https://$D/auth/open" --post "user=bob&next=/"
# bob's cookie presented on alice's origin (and alice's on bob's)
swap_cookie() {
  python3 - "$ops" "$work/swapped.json" "$A" "$B" <<'EOF'
import json, sys
jar = json.load(open(sys.argv[1]))
a, b = sys.argv[3].split(":")[0], sys.argv[4].split(":")[0]
json.dump({a: jar[b], b: jar[a]}, open(sys.argv[2], "w"))
EOF
}
check "bob's and alice's cookies swapped" swap_cookie
check "alice's origin refuses bob's cookie" status_is 401 "$work/swapped.json" "https://$A/" --fetch
check "bob's origin refuses alice's cookie" status_is 401 "$work/swapped.json" "https://$B/" --fetch
check "a forged identity header without a cookie is refused" \
  status_is 401 "$none" "https://$A/" --fetch -H "X-Agent-Box-User: alice" -H "X-Agent-Box-Session: 00000000000000000000000000000000"

# phase: expiry, begun here and judged after the webhooks below, so that
# the other checks run while the session ages (no wait on the clock). The
# auth service restarts with the golden's configuration but a session
# lifetime of one minute (the shortest it accepts), alice-only logs in, the
# configuration is put back (a session keeps its stored expiry across
# restarts), and a terminal of that session is held open.
expiry_config() {
  local cfgfile
  cfgfile=$(systemctl show -P Environment agent-box-auth.service | tr ' ' '\n' | sed -n 's/^AGENT_BOX_AUTH_CONFIG=//p')
  [ -r "$cfgfile" ] || {
    echo "no AGENT_BOX_AUTH_CONFIG in agent-box-auth.service"
    return 1
  }
  install -d -m 0755 /run/agent-box-test /run/systemd/system/agent-box-auth.service.d
  python3 - "$cfgfile" /run/agent-box-test/auth-config.json <<'EOF2'
import json, sys
c = json.load(open(sys.argv[1]))
c["sessionLifetime"] = "1m"
json.dump(c, open(sys.argv[2], "w"))
EOF2
  chmod 0644 /run/agent-box-test/auth-config.json
  printf '[Service]\nEnvironment=AGENT_BOX_AUTH_CONFIG=/run/agent-box-test/auth-config.json\n' \
    >/run/systemd/system/agent-box-auth.service.d/zz-expiry.conf
  systemctl daemon-reload && systemctl restart agent-box-auth.service
}
check "the auth service restarts with a one-minute session lifetime" expiry_config
ex=$work/expiring.json
# The session's expiry is what the auth service stored for it (the newest
# box session of alice-only): the login's own duration does not blur it.
login_expiring() {
  client login "$ex" alice-only "$(password alice-only)" alice || return 1
  python3 - "$(systemctl show -P StateDirectory agent-box-auth.service)" >"$work/expiring.at" <<'EOF2'
import datetime, json, re, sys
st = json.load(open("/var/lib/" + sys.argv[1] + "/sessions.json"))
box = [s for s in st["sessions"] if s["login"] == "alice-only" and s["origin"] == ""]
newest = max(box, key=lambda s: s["created"])
# Go writes nanoseconds; Python parses microseconds
at = re.sub(r"(\.\d{6})\d*", r"\1", newest["expires"]).replace("Z", "+00:00")
print(int(datetime.datetime.fromisoformat(at).timestamp()))
EOF2
}
check "alice-only logs in (the session expires a minute later)" in_out "url https://$A/" login_expiring
restore_config() {
  rm -f /run/systemd/system/agent-box-auth.service.d/zz-expiry.conf &&
    systemctl daemon-reload && systemctl restart agent-box-auth.service
}
check "the auth service restarts with its own configuration" restore_config
check "the fresh session opens alice's origin" status_is 200 "$ex" "https://$A/"
ended_lines() { journalctl -b -u agent-box-web@alice.service -o cat | grep -c 'box session ended' || true; }
ended_before=$(ended_lines)
hold_expiring() {
  client hold "$ex" "wss://$A/term/ws?arg=main" "https://$A" 150 >"$work/hold-expiring.out" 2>&1 &
}
check "an open terminal of that session" hold_expiring
# bob's session list is held open meanwhile (bob's web daemon does nothing
# else until the expiry is judged): the CPU time that daemon spends then
# is what an open, idle list costs (judged there).
web_cpu() { awk '{ print $14 + $15 }' "/proc/$(systemctl show -P MainPID agent-box-web@bob.service)/stat"; }
bob_list() { client inbox "$ops" "https://$B/events" 240 >"$work/events-bob.out" 2>&1 & }
check "ops opens bob's live session list" bob_list
check "it sends bob's sessions at once" wait_until 30 grep -q '^event [0-9]* sessions ' "$work/events-bob.out"
idle_from=$(now_ms) idle_cpu=$(web_cpu)
# phase: a terminal
# term JAR ORIGIN: types into alice's session main and waits for the answer.
# The answer is computed by alice's shell and new each call (the screen
# tmux redraws on attach still shows the earlier ones).
term() {
  local n=$((RANDOM + 1000))
  client term "$1" "wss://$A/term/ws?arg=main" "$2" "echo MARK-\$(($n*2))-\$(id -un)" "MARK-$((n * 2))-alice"
}
check "a WebSocket to alice's session opens and runs as alice" in_out found term "$ops" "https://$A"
# A terminal of a live session must outlast the web daemon's liveness checks
# (every $check_every s); its result is read before the logout below.
hold_live() { client hold "$ops" "wss://$A/term/ws?arg=main" "https://$A" $((3 * check_every)) >"$work/hold-live.out" 2>&1 & }
check "a terminal held open for three of the web daemon's session checks" hold_live
echo_latency() {
  client echo "$ops" "wss://$A/term/ws?arg=main" "https://$A" 40 >"$work/echo.out" 2>&1
  cat "$work/echo.out"
  grep -q '^echo 40 keystrokes' "$work/echo.out"
}
check "40 keystrokes each come back (echo latency measured)" echo_latency
note "measure: keystroke echo through Caddy, web daemon, ttyd, tmux: $(sed -n 's/^echo //p' "$work/echo.out") (emulated machine, TCG)"
check "a WebSocket from another origin is refused" in_out "status 403" term "$ops" "https://evil.example"
check "a WebSocket from bob's origin is refused on alice's" in_out "status 403" term "$ops" "https://$B"
check "a WebSocket with bob's cookie on alice's origin is refused" in_out "status 401" term "$work/swapped.json" "https://$A"
check "a session name the registry lacks is refused" \
  status_is 400 "$ops" "https://$A/term/?arg=nosuch"

# phase: paths and hosts that must reach nothing
# reaches_nothing URL: under /auth/ only the auth pages answer, and what
# they answer for such a path is 404, 400, or a redirect to the cleaned path
# (which is then routed like any other request on that origin), never the
# verify endpoint's identity headers.
reaches_nothing() {
  local out code
  out=$(client get "$ops" "$1" --fetch)
  code=$(sed -n '1s/^status //p' <<<"$out")
  sed -n '1p; /^header Location:/p; /^header X-Agent-Box/p' <<<"$out"
  case $code in 400 | 404 | 307 | 308) ;; *) return 1 ;; esac
  ! grep -q '^header X-Agent-Box' <<<"$out" &&
    ! grep -q '^header Location: https\?://[^/]*bob' <<<"$out"
}
check "an encoded path does not reach /verify" reaches_nothing "https://$A/auth/..%2f..%2fverify?user=bob"
check "a dotted path does not reach /verify" reaches_nothing "https://$A/auth/../verify?user=bob"
hostile_host() {
  local code
  code=$(curl -sk --http2 -o "$work/hostile.out" -w '%{http_code}' \
    --resolve "$A:127.0.0.1" -H 'Host: ../bob' "https://$A/" || true)
  echo "status $code, body: $(head -c 200 "$work/hostile.out")"
  # nothing answered, or Caddy answered with no backend's content (no
  # route matches such a host: an empty answer)
  [ "$code" = 000 ] && return 0
  ! grep -q . "$work/hostile.out" && [ "$code" != 204 ] && [ "$code" != 101 ]
}
check "a hostile Host (:authority) over HTTP/2 reaches nothing" hostile_host

# phase: a listener alice puts in place of her ttyd socket
sock=/run/agent-box-term/alice/ttyd.sock
awork=$(mktemp -d) # alice's, apart from the cookie jars in $work
chown alice "$awork"
fake_ttyd() {
  as alice sh -c "mv '$sock' '$sock.real' && exec python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
open(sys.argv[2], \"w\").close()
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b\"\"
    open(sys.argv[2], \"ab\").write(data)
    c.sendall(b\"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nFAKE-TTYD\")
    c.close()
' '$sock' '$awork/fake-saw'" &
  echo $! >"$work/fake.pid"
  # the listener makes its file once it listens (the socket path alone
  # exists before the mv too: ttyd's)
  wait_until 10 test -f "$awork/fake-saw"
}
check "alice (from a login) replaces her ttyd socket with her own listener" fake_ttyd
check "the operator's terminal request gets 502, never the listener's page" status_is 502 "$ops" "https://$A/term/?arg=main"
# The listener ran (it creates the file first) and got not one byte: the web
# daemon checks the peer before it writes, so no header (cookie or not) of
# the operator's request ever reaches it.
fake_saw_nothing() {
  [ -f "$awork/fake-saw" ] || {
    echo "the listener never started"
    return 1
  }
  [ ! -s "$awork/fake-saw" ] || {
    echo "the listener received:"
    head -c 400 "$awork/fake-saw"
    return 1
  }
}
check "the listener never received a byte of the operator's request" fake_saw_nothing
check "alice's listener cannot reach bob's ttyd" refused alice /run/agent-box-term/bob/ttyd.sock
restore_ttyd() {
  kill "$(cat "$work/fake.pid")" 2>/dev/null
  pkill -u alice -f 'FAKE-TTYD' || true
  as alice sh -c "rm -f '$sock' && mv '$sock.real' '$sock'"
}
check "alice's real ttyd socket is put back" restore_ttyd
check "the terminal works again" in_out found term "$ops" "https://$A"

# phase: alice cannot take a socket or descriptor from her web daemon
webpid=$(systemctl show -P MainPID agent-box-web@alice.service)
check "alice's web daemon runs (it is socket-activated)" test "$webpid" -gt 0
check "alice cannot list her web daemon's descriptors" bash -c "! runuser -u alice -- ls /proc/$webpid/fd"
no_ptrace() {
  as alice python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.ptrace(16, int(sys.argv[1]), 0, 0) == -1 else 1)' "$webpid"
}
check "alice cannot ptrace her web daemon" no_ptrace

# phase: settings. What the settings page does through HTTP is what the CLI
# does; the supervisor applies it; a cross-site form changes nothing; a
# secret's value is never shown.
settings_post() { client get "$ops" "https://$A/settings/$1" --post "$2" "${@:3}"; }
check "the settings page lists alice's sessions" in_out '<a href="/term/?arg=main">main</a>' client get "$ops" "https://$A/settings"
check "the page adds a session (303)" in_out "status 303" settings_post sessions 'action=add&name=webadd&agent=shell&cwd=%2Fhome%2Falice&args=--norc%0A-i'
check "the CLI adds the same session" ab alice session add cliadd --agent shell --cwd /home/alice -- --norc -i
same_as_cli() {
  ab alice session ls --json | python3 -c '
import json, sys
s = {x["name"]: x for x in json.load(sys.stdin)}
keys = ("agent", "args", "cwd", "stopped")
w, c = ({k: s[n].get(k) for k in keys} for n in ("webadd", "cliadd"))
print("web", w, "cli", c)
sys.exit(0 if w == c else 1)'
}
check "the page's session is the CLI's (agent, arguments, directory)" same_as_cli
check "the supervisor starts the page's session" wait_until 30 session_is alice webadd running
shows_uptime() {
  local row
  row=$(client get "$ops" "https://$A/settings" | grep -o '<a href="/term/?arg=webadd">webadd</a>.*' | head -n 1)
  echo "$row" | head -c 400
  grep -Eq '<td>running</td><td>[0-9]+[smhd]' <<<"$row"
}
check "the settings page shows how long it has been up" wait_until 10 shows_uptime
# as Chrome sends a form from a no-referrer page: Origin null, Sec-Fetch-Site same-origin
check "the page stops it (303; Origin null from a same-origin form)" in_out "status 303" settings_post sessions 'action=stop&name=webadd' -H "Origin: null"
check "the supervisor stops it" wait_until 30 session_is alice webadd stopped
cross_site() {
  settings_post sessions 'action=remove&name=webadd&confirm=yes' -H "Sec-Fetch-Site: cross-site" -H "Origin: https://evil.example"
}
check "a cross-site form is refused (403)" in_out "status 403" cross_site
check "and changed nothing" session_is alice webadd stopped
check "the page asks before it removes it" in_out "<h1>Remove session webadd?</h1>" settings_post sessions 'action=remove&name=webadd'
check "confirmed, the page removes it (303)" in_out "status 303" settings_post sessions 'action=remove&name=webadd&confirm=yes'
check "the registry no longer has it" session_is alice webadd missing
check "the CLI removes its own" ab alice session rm cliadd
check "the page refuses a bad name with the CLI's words" in_out "invalid session name" settings_post sessions 'action=add&name=a+b&agent=shell'
check "the page sets a secret (303)" in_out "status 303" settings_post secrets "action=set&key=WEB_TOKEN&value=tok-$$-value"
check "the CLI sees its key" in_out WEB_TOKEN ab alice env ls
value_not_shown() {
  local out
  out=$(client get "$ops" "https://$A/settings")
  grep -q '<code>WEB_TOKEN</code>' <<<"$out" && ! grep -q "tok-$$-value" <<<"$out"
}
check "the page shows the key, never the value" value_not_shown
check "the page removes the secret (303)" in_out "status 303" settings_post secrets 'action=remove&key=WEB_TOKEN'

# phase: downloads. alice's ~/downloads is served on her origin as
# attachments only; a symlink alice makes inside her unit to a file of bob's
# gives 404, never the file.
make_downloads() {
  as alice sh -c 'mkdir -p ~/downloads && printf "report 0123456789\n" >~/downloads/report.txt &&
    printf "<html><script>document.title=\"ran\"</script></html>\n" >~/downloads/page.html' &&
    printf 'BOB-SECRET-%s\n' "$$" >/home/bob/secret.txt && chown bob: /home/bob/secret.txt &&
    chmod 0644 /home/bob/secret.txt &&
    nsenter -t "$(server_pid alice)" -m -- \
      runuser -u alice -- ln -s /home/bob/secret.txt /home/alice/downloads/bob.txt
}
check "alice puts files in ~/downloads and, inside her unit, a symlink to bob's file" make_downloads
check "alice's origin lists her downloads" in_out 'href="/downloads/page.html"' client get "$ops" "https://$A/downloads/"
# attachment FILE: the download's status and headers say "save, never render"
attachment() {
  local out
  out=$(client get "$ops" "https://$A/downloads/$1")
  sed -n '1p; /^header Content-\(Type\|Disposition\|Security-Policy\):/p; /^header X-Content-Type-Options:/p' <<<"$out"
  grep -q '^status 200$' <<<"$out" &&
    grep -q "^header Content-Disposition: attachment; filename=\"$1\"" <<<"$out" &&
    grep -q '^header Content-Type: application/octet-stream$' <<<"$out" &&
    grep -q '^header Content-Security-Policy: sandbox' <<<"$out" &&
    grep -q '^header X-Content-Type-Options: nosniff$' <<<"$out"
}
check "a download is an attachment with nosniff and a sandbox CSP" attachment report.txt
check "an .html download is an attachment too (never rendered)" attachment page.html
check "a Range request gets that range" in_out "status 206" client get "$ops" "https://$A/downloads/report.txt" -H "Range: bytes=7-16"
no_bob() {
  local out
  out=$(client get "$ops" "https://$A/downloads/bob.txt")
  head -n 1 <<<"$out"
  grep -q '^status 404$' <<<"$out" && ! grep -q 'BOB-SECRET' <<<"$out"
}
check "the symlink to bob's file gives 404, never its content" no_bob

# phase: uploads. A file uploaded on alice's origin lands byte for byte in
# the ~/uploads her agents see (read inside her unit), also after her agent
# removed it and after it replaced it with a directory of its own; its path
# is typed into her session; a name that is a path is refused. (The size
# cap is the Go tests' and the browser test's: streaming 64 MiB through
# Caddy here took 18-25 s and once stalled the client, and Caddy did not
# pass on the daemon's early 413 to a form announced over the limit.)
upd=$(mktemp -d)
head -c 300000 /dev/urandom >"$upd/blob.bin"
blob_sum=$(sha256sum <"$upd/blob.bin" | cut -d ' ' -f 1)
upload() { client get "$ops" "https://$A/uploads" --field session=main --upload "$@"; }
# agent_sees NAME: inside alice's unit, ~/uploads/NAME has the blob's bytes
agent_sees() { is "$blob_sum" "$(in_unit alice sha256sum "/home/alice/uploads/$1" | cut -d ' ' -f 1)"; }
check "an upload is stored and its path offered (200)" in_out "Uploaded <code>/home/alice/uploads/blob.bin</code>" upload "$upd/blob.bin" blob.bin
check "alice's agent sees it, byte for byte, inside her unit" agent_sees blob.bin
check "the same name again is kept apart (never overwritten)" in_out "/home/alice/uploads/blob-1.bin" upload "$upd/blob.bin" blob.bin
check "alice's agent removes ~/uploads" in_unit alice rm -rf /home/alice/uploads
check "the next upload makes it again and lands there" in_out "status 200" upload "$upd/blob.bin" blob.bin
check "alice's agent sees that one" agent_sees blob.bin
check "alice's agent replaces ~/uploads with a directory of its own" in_unit alice sh -c 'mv ~/uploads ~/uploads.old && mkdir ~/uploads'
check "the next upload lands in the new directory" in_out "status 200" upload "$upd/blob.bin" again.bin
check "alice's agent sees it there" agent_sees again.bin
typed_path() { tmq alice capture-pane -p -t "=main:" | grep -qF "/home/alice/uploads/again.bin"; }
check "its path is typed into alice's session (303)" in_out "status 303" client get "$ops" "https://$A/uploads/paste" --post 'session=main&name=again.bin'
check "the session's pane shows the path" wait_until 10 typed_path
check "(the typed line is cleared)" tm alice send-keys -t "=main:" C-u
check "a name that is a path is refused (400)" in_out "Bad name: the name contains a slash" upload "$upd/blob.bin" ../escape.bin
check "and nothing escaped" test ! -e /home/alice/escape.bin
rm -rf "$upd"

# phase: the live session list. alice's origin keeps its list live from
# GET /events: a session the CLI adds or removes reaches an open list
# without a reload; a remove from the list asks first.
alice_list() { client inbox "$ops" "https://$A/events" 120 >"$work/events-alice.out" 2>&1 & }
check "ops opens alice's live session list" alice_list
check "it sends alice's sessions at once" wait_until 30 grep -q '^event [0-9]* sessions ' "$work/events-alice.out"
# last_sessions: the data of the stream's last sessions event
last_sessions() { awk '/^event [0-9]* sessions /{ d = "" } /^data /{ d = d $0 "\n" } END { printf "%s", d }' "$work/events-alice.out"; }
listed_live() { last_sessions | grep -qF "arg=$1\""; }
added_at=$(now_ms)
check "the CLI adds session live" ab alice session add live --agent shell
check "the open list shows it, unasked" wait_until 15 listed_live live
live_at=$(awk '/^event [0-9]* sessions /{ t = $2 } /^data .*arg=live"/{ print t; exit }' "$work/events-alice.out")
note "measure: session add (the CLI, started at $added_at) -> the list's event through Caddy: $((live_at - added_at)) ms"
check "a remove from the list asks first (the confirmation page)" in_out "<h1>Remove session live?</h1>" client get "$ops" "https://$A/settings/sessions" --post 'action=remove&name=live&back=%2F'
check "and removed nothing" session_is alice live running
check "confirmed, it removes it and returns to the list (303 /)" in_out "header Location: /" client get "$ops" "https://$A/settings/sessions" --post 'action=remove&name=live&back=%2F&confirm=yes'
unlisted_live() { ! listed_live live; }
check "the open list drops it" wait_until 15 unlisted_live

# phase: webhooks. POST https://D/alice/hook/NAME is the one route without a
# login: Caddy sends it to alice's hook socket, her web daemon checks the
# signature, stores the delivery durably and wakes the session. ci wakes
# inbox (a shell: the notice typed into it reads the delivery through
# $AGENT_BOX_HOOKS_DIR); bulk only stores.
CI=https://$D/alice/hook/ci BULK=https://$D/alice/hook/bulk
ci_secret=/etc/agent-box-demo/alice-ci.hook bulk_secret=/etc/agent-box-demo/alice-bulk.hook
hooks=/home/alice/.local/state/agent-box/hooks
check "agent-box-hook@alice.socket listens" wait_until 60 systemctl is-active --quiet agent-box-hook@alice.socket
check "alice's hook socket is root:caddy 0660" mode /run/agent-box-hook/alice.sock root:caddy 660
check "bob, who has no webhook, has no hook socket" test ! -e /run/agent-box-hook/bob.sock
check "bob cannot connect to alice's hook socket" refused bob /run/agent-box-hook/alice.sock
check "alice cannot connect to her own hook socket" refused alice /run/agent-box-hook/alice.sock
stop_inbox() { ab alice session stop inbox && wait_until 30 sh -c '! tmux -S /run/agent-box/alice/tmux.sock has-session -t =inbox 2>/dev/null'; }
check "alice stops her session inbox" stop_inbox
stored_count() { find "$hooks/$1" -maxdepth 1 -name '*.json' 2>/dev/null | wc -l; }
# refused HOOK-URL STATUS ARGS...: the answer is STATUS, nothing is stored
# and inbox stays stopped.
refused_hook() {
  local url=$1 want=$2 out
  shift 2
  out=$(hook send "$url" "$ci_secret" "$@")
  head -n 2 <<<"$out"
  grep -q "^status $want\$" <<<"$out" && [ "$(stored_count ci)" = 0 ] && session_stopped alice inbox
}
check "an unsigned delivery gets 401 and changes nothing" refused_hook "$CI" 401 '{"a":1}' --no-sig
check "a delivery signed with another hook's secret gets 401" in_out "status 401" hook send "$CI" "$bulk_secret" '{"a":1}'
check "an unknown hook gets 404" refused_hook "https://$D/alice/hook/nope" 404 '{"a":1}'
not_taken() {
  local out
  out=$(hook send "https://$D/bob/hook/ci" "$ci_secret" '{"a":1}')
  head -n 1 <<<"$out"
  ! grep -q '^status 2' <<<"$out" && [ "$(stored_count ci)" = 0 ]
}
check "bob's path, where bob has no hook, takes nothing" not_taken
big=$(head -c 65537 /dev/zero | tr '\0' x)
check "a body over ci's 64 KiB cap gets 413" refused_hook "$CI" 413 "$big"
check "a GET gets 405" in_out "status 405" curl -sk -o /dev/null -w 'status %{http_code}\n' --resolve "$D:127.0.0.1" "$CI"
body='{"action":"created","comment":{"body":"the build is red"},"n":'$$'}'
deliver() { hook send "$CI" "$ci_secret" "$body" -H "X-GitHub-Event: issue_comment" -H "X-GitHub-Delivery: d-$$" >"$work/hook1.out"; cat "$work/hook1.out"; grep -q '^status 202$' "$work/hook1.out"; }
check "a signed delivery gets 202" deliver
hook_id=$(sed -n 's/.*"id":"\([^"]*\)".*/\1/p' "$work/hook1.out")
stored_ok() {
  local f=$hooks/ci/$hook_id.json
  [ "$(stat -c '%U %a' "$f")" = "alice 600" ] &&
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); b = json.loads(sys.argv[2]); assert d["body"] == b and d["headers"]["X-Github-Event"] == "issue_comment" and d["id"] == sys.argv[3], d' "$f" "$body" "$hook_id"
}
check "it is stored under ~/.local/state/agent-box/hooks/ci as alice's, with its headers" stored_ok
check "it starts the stopped session inbox" wait_until 30 has_session alice inbox
agent_read() {
  wait_until 60 test -s "/home/alice/seen-$hook_id.json" && cmp "$hooks/ci/$hook_id.json" "/home/alice/seen-$hook_id.json"
}
check "the notice typed into inbox made the agent read the delivery through \$AGENT_BOX_HOOKS_DIR" agent_read
replayed() {
  local out
  out=$(hook send "$CI" "$ci_secret" "$body" -H "X-GitHub-Delivery: fresh-$$")
  echo "$out"
  grep -q '^status 202$' <<<"$out" && grep -qF "\"id\":\"$hook_id\",\"duplicate\":true" <<<"$out" && [ "$(stored_count ci)" = 1 ]
}
check "a replay under a fresh delivery id gets the stored id and stores nothing" replayed
sleep 4 # the waker would type within a few seconds
check "the replay typed nothing into inbox" test "$(find /home/alice -maxdepth 1 -name 'seen-*.json' | wc -l)" = 1
burst() {
  hook burst "$BULK" "$bulk_secret" 100 >"$work/burst.out"
  grep -v '^id ' "$work/burst.out"
  grep -q '^status 202 100$' "$work/burst.out" && grep -q '^ids 100$' "$work/burst.out"
}
check "100 concurrent deliveries all get 202 with distinct ids" burst
note "measure: 100 concurrent webhook deliveries through Caddy, answer times: $(sed -n 's/^latency //p' "$work/burst.out") ms (emulated machine, TCG)"
all_stored() {
  local id missing=0
  while read -r id; do
    [ -f "$hooks/bulk/$id.json" ] || { echo "missing $id"; missing=$((missing + 1)); }
  done < <(sed -n 's/^id //p' "$work/burst.out")
  [ "$missing" = 0 ] && [ "$(stored_count bulk)" = 100 ]
}
check "every one of them is stored" all_stored
logged_delivery() { journalctl -b -u agent-box-web@alice.service --no-pager | grep -qF "stored delivery $hook_id"; }
check "the web daemon logged the deliveries without their bodies" wait_until 10 logged_delivery
no_body_in_log() { ! journalctl -b -u agent-box-web@alice.service --no-pager | grep -q 'the build is red'; }
check "and no body" no_body_in_log

# phase: expiry, judged. The terminal of alice-only's expiring session
# must close after the expiry (not before: a terminal of a live session
# stays open), because the web daemon's liveness check found the session
# ended (its log says so). How soon is printed against the promise (two
# check intervals), not checked: a busy host delays any guest by seconds;
# TestAnEndedBoxSessionClosesItsWebSocketsOnly (internal/runtime/web)
# proves the close at the next check on the host.
closed_by_expiry() {
  wait_until 150 grep -q 'closed after\|open after' "$work/hold-expiring.out"
  cat "$work/hold-expiring.out"
  local closed at
  grep -q '^closed after' "$work/hold-expiring.out" || return 1
  # when the client wrote that line (its last); whole seconds on both
  # sides: one second of slack each way
  closed=$(stat -c %Y "$work/hold-expiring.out")
  at=$(cat "$work/expiring.at")
  echo "closed $((closed - at)) s after the session's expiry (not before it; promised: within $((2 * check_every)) s)"
  echo "$((closed - at))" >"$work/expiry-close.s"
  [ "$closed" -ge $((at - 1)) ] || return 1
  [ "$(ended_lines)" -gt "$ended_before" ] || {
    echo "the web daemon did not log that it closed the terminal of an ended session"
    return 1
  }
}
check "the open terminal of the expired session closes after the expiry, by the liveness check" closed_by_expiry
note "measure: the expired session's terminal closed $(cat "$work/expiry-close.s" 2>/dev/null || echo ?) s after the expiry (check interval $check_every s; promised: within two)"
check "the expired cookie is refused" status_is 401 "$ex" "https://$A/" --fetch
# An open list reads nothing while nothing changes: one event in all that
# time, and the daemon's CPU is that of the keep-alives (every 25 s) and
# of the login checks (every check interval), under 1% of one CPU; a list
# read once a second (registry, observations, tmux) would cost more, as
# the cost of ten reads, measured after, shows. The list stays open a
# minute at least: the checks since it opened usually take longer, but
# how long is the machine's (a fast run once measured 58 s).
while [ $(($(now_ms) - idle_from)) -lt 61000 ]; do nap 0.5; done
idle_ticks=$(($(web_cpu) - idle_cpu)) idle_secs=$((($(now_ms) - idle_from) / 1000))
idle_events=$(grep -c '^event' "$work/events-bob.out" || true)
read_cpu=$(web_cpu)
for _ in 1 2 3 4 5 6 7 8 9 10; do client get "$ops" "https://$B/" >/dev/null; done
read_ticks=$(($(web_cpu) - read_cpu))
note "measure: bob's web daemon with an open, idle session list: $idle_ticks clock ticks (1/$(getconf CLK_TCK) s) of CPU in $idle_secs s, $idle_events event(s); ten reads of the list page cost it $read_ticks ticks"
idle_cost() {
  echo "$idle_ticks ticks in $idle_secs s, $idle_events event(s)"
  [ "$idle_secs" -ge 60 ] && [ "$idle_events" = 1 ] && [ $((idle_ticks * 100)) -le $((idle_secs * $(getconf CLK_TCK))) ]
}
check "an open, idle session list sent one event in a minute or more and cost under 1% of a CPU" idle_cost

# phase: sessions end
stayed_open() {
  wait_until 100 grep -q 'open after\|closed after' "$work/hold-live.out"
  cat "$work/hold-live.out"
  grep -q "^open after $((3 * check_every)) s" "$work/hold-live.out"
}
check "the terminal of a live session stayed open through its session checks" stayed_open
check "logout on alice's origin" in_out "status 303" client get "$ops" "https://$A/auth/logout" --post ""
check "after the logout alice's origin refuses the cookie" status_is 401 "$ops" "https://$A/" --fetch
check "after the logout bob's origin refuses it too (one login session)" status_is 401 "$ops" "https://$B/" --fetch
check "ops logs in again" in_out "url https://$A/" client login "$ops" ops "$(password ops)" alice
# the inbox (docs/web-contract.md, "Listener pages"): the box origin's live
# list, streamed through Caddy. alice-only's stream is a crafted request for
# bob, and must never show him. Three new sessions of bob ring their bell
# (nobody shows them): each reaches ops's stream.
inbox() { client inbox "$1" "https://$D/auth/inbox$2" 200 >"$work/inbox-$3.out" 2>&1 & }
check "ops opens the inbox's event stream" inbox "$ops" "" ops
check "alice-only opens it asking for bob" inbox "$ao" "?user=bob" ao
first_event() { grep -q '^event [0-9]* inbox ' "$work/inbox-$1.out"; }
check "ops's stream sends the inbox at once" wait_until 30 first_event ops
check "... and alice-only's" wait_until 30 first_event ao
listed() { grep -qF "arg=$2\"" "$work/inbox-$1.out"; }
for i in 1 2 3; do
  check "bob's session ring$i starts" ab bob session add "ring$i" --agent shell
  check "... and is live" wait_until 30 has_session bob "ring$i"
  sleep 1 # its prompt's output first, then the bell
  tm bob send-keys -t "=ring$i:" "printf '\\a'" Enter
  check "its bell reaches ops's inbox" wait_until 15 listed ops "ring$i"
done
# When the supervisor logged each needs-you (its journal's time) and when
# the event listing it reached the client (ms, the guest's one clock).
inbox_latency() {
  journalctl -q -b -u "$(unit bob)" -o short-unix | grep -F ': needs-you (bell)' >"$work/bells.log"
  python3 - "$work/bells.log" "$work/inbox-ops.out" <<'EOF'
import re, sys
bells, seen, at = {}, {}, None
for line in open(sys.argv[1]):
    m = re.search(r'session "(ring[0-9])": needs-you \(bell\)', line)
    if m and m.group(1) not in bells:
        bells[m.group(1)] = float(line.split()[0]) * 1000
for line in open(sys.argv[2]):
    if line.startswith("event "):
        at = int(line.split()[1])
    elif line.startswith("data ") and at is not None:
        for m in re.finditer(r'arg=(ring[0-9])"', line):
            seen.setdefault(m.group(1), at)
d = sorted(seen[s] - bells[s] for s in bells if s in seen)
print(" ".join(f"{x:.0f}" for x in d) + " ms")
EOF
}
note "measure: attention state (supervisor's log) -> inbox event at the browser, through Caddy: $(inbox_latency)"
never_bob() {
  grep -v '^data' "$work/inbox-ao.out" || true
  first_event ao && ! grep -q 'bob' "$work/inbox-ao.out"
}
check "alice-only's stream, asked for bob, never showed him" never_bob
# (the body only: the box origin's CSP header names every user origin)
no_bob_page() {
  local page
  page=$(client get "$ao" "https://$D/" | sed '1,/^$/d')
  grep -q 'id="inbox"' <<<"$page" && ! grep -q bob <<<"$page"
}
check "alice-only's page lists nothing of bob" no_bob_page
hold() { client hold "$ops" "wss://$A/term/ws?arg=main" "https://$A" 90 >"$work/hold.out" 2>&1 & }
check "an open terminal" hold
sleep 2
ended_before=$(ended_lines)
# it prints how many sessions it ended: the box session and its children
revoke() {
  local n
  n=$("$(agent_box_bin alice)" web revoke ops) || return 1
  echo "ended $n"
  [[ "$n" =~ ^[1-9][0-9]*$ ]]
}
check "root revokes ops" revoke
inbox_ended() { grep -q '^ended after' "$work/inbox-ops.out"; }
check "... and its inbox stream ends at once" wait_until 10 inbox_ended
# closed_by_revocation: the hold (opened 2 s before the revoke, for 90 s)
# is closed by the web daemon, which logs why (how soon is printed against
# the promise of two check intervals, as for the expiry above)
closed_by_revocation() {
  wait_until 75 grep -q 'closed after' "$work/hold.out" && cat "$work/hold.out" &&
    [ "$(ended_lines)" -gt "$ended_before" ]
}
check "the open terminal of the revoked login closes, by the liveness check" closed_by_revocation
note "measure: the revoked login's terminal: $(grep -m1 'closed after' "$work/hold.out") (opened 2 s before the revoke; check interval $check_every s, promised: within two)"
check "the revoked cookie is refused" status_is 401 "$ops" "https://$A/" --fetch
check "alice-only's session survives a restart of the auth service (before)" status_is 200 "$ao" "https://$A/"
# attention states (docs/web-contract.md, "Listener status"): each user's
# supervisor, from inside its hardened unit, reaches the status socket
# shellcheck disable=SC2317 # called through wait_until
reports() { journalctl -q -b -u agent-box-auth.service -o cat | grep -qF "$1 reports the attention states of"; }
check "alice's supervisor reports her sessions' attention states to the auth service" wait_until 30 reports alice
check "... and bob's his" wait_until 30 reports bob
check "the auth service restarts" systemctl restart agent-box-auth.service
check "alice-only's session survives a restart of the auth service" status_is 200 "$ao" "https://$A/"

# phase: Caddy holds no secret and was never reloaded
caddypid=$(systemctl show -P MainPID caddy.service)
secrets() {
  python3 - "$ops" "$ao" "$here/demo-logins" <<'EOF'
import json, sys
for jar in sys.argv[1:3]:
    for cookies in json.load(open(jar)).values():
        for v in cookies.values():
            print(v.split(".")[-1])
for line in open(sys.argv[3]):
    if line.strip() and not line.startswith("#"):
        print(line.split()[2].split("$")[-1])
EOF
}
no_secret_in() {
  local s
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    if grep -qF -- "$s" "$1"; then
      echo "found a secret in $1"
      return 1
    fi
  done < <(secrets)
}
check "Caddy's environment holds no cookie or hash" no_secret_in "/proc/$caddypid/environ"
caddy_config() { curl -s --unix-socket /run/caddy/admin.sock http://localhost/config/ >"$work/caddy-config.json"; }
check "Caddy's running config is readable by root (control)" caddy_config
check "Caddy's running config holds no cookie or hash" no_secret_in "$work/caddy-config.json"
not_reloaded() {
  local n
  n=$(journalctl -b -u caddy.service -o cat | grep -ci 'reload' || true)
  [ "$n" = 0 ] || {
    journalctl -b -u caddy.service -o cat | grep -i reload | head
    return 1
  }
}
check "Caddy was never reloaded during the user actions" not_reloaded

# phase: fail2ban. A client in a second network namespace (10.99.0.2, over
# a veth pair to the guest's 10.99.0.1) fails to log in maxretry times: its
# address is banned and its next connection refused, while loopback still
# works; an unban restores it. What a client puts in the address headers
# never reaches the ban.
port=${D##*:}
maxretry=$(sed -n 's/^maxretry = //p' /etc/fail2ban/jail.d/agent-box-auth.local)
check "fail2ban runs the agent-box-auth jail" wait_until 60 fail2ban-client status agent-box-auth
netns() {
  ip netns add abcl &&
    ip link add ab-host type veth peer name ab-client &&
    ip link set ab-client netns abcl &&
    ip addr add 10.99.0.1/24 dev ab-host && ip link set ab-host up &&
    ip netns exec abcl ip addr add 10.99.0.2/24 dev ab-client &&
    ip netns exec abcl ip link set ab-client up && ip netns exec abcl ip link set lo up
}
check "a client network namespace at 10.99.0.2" netns
# from_client CURL-ARGS...: curl in the namespace, to the box through 10.99.0.1
from_client() {
  ip netns exec abcl curl -sk --connect-timeout 10 -o /dev/null -w '%{http_code}' \
    --resolve "$D:10.99.0.1" "$@"
}
check "the client reaches the login page" in_out 200 from_client "https://$D/auth/login"
bad_logins() {
  local i code
  for i in $(seq "$maxretry"); do
    # the address headers a client sends are replaced or ignored
    code=$(from_client -H 'X-Agent-Box-Client: 192.0.2.99' -H 'X-Forwarded-For: 192.0.2.98' \
      --data-urlencode "login=guess$i" --data-urlencode 'password=wrong' "https://$D/auth/login") || true
    echo "attempt $i: $code"
    [ "$code" = 401 ] || return 1
  done
}
check "the client fails to log in $maxretry times (401 each)" bad_logins
logged_the_route_address() {
  local lines
  lines=$(journalctl -b -u agent-box-auth.service -o cat | grep 'login failed login=guess' || true)
  echo "$lines"
  [ "$(grep -c 'addr=10\.99\.0\.2$' <<<"$lines")" = "$maxretry" ] && ! grep -q '192\.0\.2\.9' <<<"$lines"
}
check "each failure is logged with the address Caddy saw, not the client's headers" logged_the_route_address
banned() { fail2ban-client status agent-box-auth | grep -q 'Banned IP list:.*10\.99\.0\.2'; }
check "fail2ban bans 10.99.0.2" wait_until 60 banned
not_banned_forged() {
  fail2ban-client status agent-box-auth
  ! fail2ban-client status agent-box-auth | grep -q '192\.0\.2\.9'
}
check "no address from a client header is banned" not_banned_forged
connect_refused() {
  local rc=0
  ip netns exec abcl curl -sk --connect-timeout 10 -o /dev/null --resolve "$D:10.99.0.1" "https://$D/auth/login" || rc=$?
  echo "curl exit status $rc (7: connection refused)"
  [ "$rc" = 7 ]
}
check "the banned client's next connection to port $port is refused" connect_refused
check "loopback still reaches the login page" status_is 200 "$none" "https://$D/auth/login"
check "root unbans 10.99.0.2" fail2ban-client set agent-box-auth unbanip 10.99.0.2
check "after the unban the client reaches the login page again" in_out 200 from_client "https://$D/auth/login"
# notifications out (docs/web-contract.md, "Notifications"): ops's notify
# URL (tests/scenarios/demo-notify) is a receiver in the client namespace. A
# bell in a new session of bob's reaches it as the documented JSON, sent by
# agent-box-notify.service, the one web unit with outbound network.
notify_url=$(awk '$1 == "ops" { print $2 }' "$here/demo-notify")
notify_addr=${notify_url#http://}
notify_addr=${notify_addr%%/*}
received="$work/received"
ip netns exec abcl python3 "$here/receiver.py" "${notify_addr%:*}" "${notify_addr#*:}" "$received" &
receiver_pid=$!
check "a receiver listens at ops's notify URL, in the client namespace" wait_until 20 test -e "$received.ready"
# ops's notifications of ring1..3 went out before the receiver listened: each
# is tried again with growing waits until it is sent or given up, in order
# (one queue per login); ring9's must not wait behind them, or its time
# measures their retries (3.2 s in a run that did not wait)
notify_log() { journalctl -q -b -u agent-box-notify.service -o cat; }
retried() { notify_log | grep -qE 'login ops: try 1 of [0-9]+ failed'; }
settled() { [ "$(notify_log | grep -cE 'login ops: (sent|gave up on) bob needs-you')" -ge 3 ]; }
check "ops's notifications from before the receiver were tried again" retried
check "... and each was sent or given up" wait_until 90 settled
check "bob's session ring9 starts" ab bob session add ring9 --agent shell
check "... and is live" wait_until 30 has_session bob ring9
sleep 1 # its prompt's output first, then the bell
tm bob send-keys -t "=ring9:" "printf '\\a'" Enter
got_ring9() { grep -q 'ring9' "$received" 2>/dev/null; }
check "its bell reaches the receiver as a POST" wait_until 20 got_ring9
payload_ok() {
  python3 - "$received" "$D" "${notify_url#http://"$notify_addr"}" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
rec = [r for r in recs if "ring9" in r["body"]][0]
body = json.loads(rec["body"])
print(rec)
want_keys = {"user", "session", "state", "reason", "link", "time"}
host = sys.argv[2]
ok = (rec["method"] == "POST" and rec["path"] == sys.argv[3]
      and set(body) == want_keys
      and body["user"] == "bob" and body["session"] == "ring9"
      and body["state"] == "needs-you" and body["reason"] == "bell"
      and body["link"] == f"https://bob.{host}/term/?arg=ring9"
      and rec["headers"]["Content-Type"] == "application/json"
      and rec["headers"]["Title"] == "bob: needs-you (bell)"
      and rec["headers"]["Click"] == body["link"])
sys.exit(0 if ok else 1)
EOF
}
check "... with the documented JSON (user, session, state, reason, link, time) and ntfy's headers" payload_ok
notify_latency() {
  local logged sent
  logged=$(journalctl -q -b -u "$(unit bob)" -o short-unix | grep -F 'session "ring9": needs-you (bell)' | head -n 1 | cut -d' ' -f1)
  sent=$(python3 -c 'import json, sys; print([json.loads(l)["ms"] for l in open(sys.argv[1]) if "ring9" in l][0])' "$received")
  python3 -c 'import sys; print(f"{int(sys.argv[2]) - float(sys.argv[1]) * 1000:.0f} ms")' "$logged" "$sent"
}
note "measure: attention state (supervisor's log) -> the POST at the receiver: $(notify_latency)"
only_ops() { python3 -c 'import json, sys; sys.exit(any(json.loads(l)["path"] != sys.argv[2] for l in open(sys.argv[1])))' "$received" "${notify_url#http://"$notify_addr"}"; }
check "only ops's URL was called (alice-only has none)" only_ops
sent_by_notify() { journalctl -q -b -u agent-box-notify.service -o cat | grep -q 'login ops: sent bob needs-you'; }
check "agent-box-notify.service logged the delivery" sent_by_notify
no_net_but_notify() {
  local u
  for u in agent-box-auth.service agent-box-web@alice.service agent-box-term@alice.service; do
    [ "$(systemctl show -P PrivateNetwork "$u")" = yes ] || [ "$(systemctl show -P IPAddressDeny "$u")" != "" ] || {
      echo "$u has network"
      return 1
    }
  done
  [ "$(systemctl show -P PrivateNetwork agent-box-notify.service)" = no ]
}
check "the auth service, web daemon and terminal have no network; the notify service has" no_net_but_notify
note "systemd-analyze security agent-box-notify.service (systemd 257): $(systemd-analyze security agent-box-notify.service 2>/dev/null | sed -n 's/^→ Overall exposure level for [^:]*: //p')"
kill "$receiver_pid" 2>/dev/null || true
check "the client network namespace goes" bash -c 'ip link del ab-host && ip netns del abcl'

# phase: password. A login changes its password on the box origin (only
# the auth service sees it): the login's other sessions end, the changing
# one stays, the old password stops working and the new one works, also
# after a restart of the auth service.
pw1=$work/pw1.json pw2=$work/pw2.json newpw="changed-$$-password"
check "alice-only logs in in one browser" in_out "url https://$D/" client login "$pw1" alice-only "$(password alice-only)"
check "and in another" in_out "url https://$D/" client login "$pw2" alice-only "$(password alice-only)"
check "the box origin serves the password form" in_out 'action="/auth/password"' client get "$pw1" "https://$D/auth/password"
check "alice-only changes the password" in_out "is changed" client get "$pw1" "https://$D/auth/password" \
  --post "old=$(password alice-only)&new=$newpw&repeat=$newpw"
logged_in() { client get "$1" "https://$D/" | grep -q 'Logged in as alice-only'; }
check "the changing browser stays logged in" logged_in "$pw1"
logged_out() { ! logged_in "$1"; }
check "the other browser's session ended" logged_out "$pw2"
check "the old password is refused" in_out "status 401" client login "$work/pw3.json" alice-only "$(password alice-only)"
sleep 2 # the login's backoff after that failure
check "the new password logs in" in_out "url https://$D/" client login "$work/pw4.json" alice-only "$newpw"
check "the auth service restarts" systemctl restart agent-box-auth.service
check "the new password still logs in" in_out "url https://$D/" client login "$work/pw5.json" alice-only "$newpw"

done_testing
