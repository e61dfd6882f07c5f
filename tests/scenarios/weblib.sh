# shellcheck shell=bash
# Helpers of the web scenarios (web, attacks), after lib.sh and with $here
# set: the web golden's origins and the clients (tests/scenarios/
# webclient.py, hookclient.py) with the answers they look for.
# shellcheck disable=SC2034 # the origins are the scenarios'
D=box.localhost:8443 A=alice.box.localhost:8443 B=bob.box.localhost:8443
export AGENT_BOX_WEB_DOMAIN=$D
: "${here:?weblib.sh needs here, the directory of the scenarios}"
client() { python3 "$here/webclient.py" "$@"; }
hook() { python3 "$here/hookclient.py" "$@"; }
password() { awk -v l="$1" '$1 == l { print $2 }' "$here/demo-logins"; }
# is WANT GOT: GOT is WANT, else say both.
is() {
  [ "$2" = "$1" ] || {
    echo "status $2, want $1"
    return 1
  }
}
# status_of JAR URL [OPTIONS...]: the status a request gets.
status_of() { client get "$@" | sed -n '1s/^status //p'; }
status_is() {
  local want=$1
  shift
  is "$want" "$(status_of "$@")"
}
# in_out WANT COMMAND...: the command's output contains WANT.
in_out() {
  local want=$1 out
  shift
  out=$("$@" 2>&1)
  grep -qF -- "$want" <<<"$out" || {
    if [ "$(wc -l <<<"$out")" -gt 30 ]; then
      head -n 20 <<<"$out"
      echo "..."
      tail -n 8 <<<"$out"
    else
      echo "$out"
    fi
    echo "(wanted: $want)"
    return 1
  }
}
