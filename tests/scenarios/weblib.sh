# shellcheck shell=bash
# Helpers of the web scenarios (web, attacks), after lib.sh and with $here
# set: the web golden's origins and the clients (tests/scenarios/
# webclient.py, hookclient.py) with the answers they look for.
# shellcheck disable=SC2034 # the origins are the scenarios'
D=box.localhost:8443 A=alice.box.localhost:8443 B=bob.box.localhost:8443
export AGENT_BOX_WEB_DOMAIN=$D
: "${here:?weblib.sh needs here, the directory of the scenarios}"
# client COMMAND ARGS...: webclient.py. Under emulation a python3 that
# imports ssl and http.client takes about a second to start, so one
# started here ("serve") answers the short commands, each in a fork of
# itself, through two FIFOs: one request at a time, from this shell or its
# command substitutions. hold, echo and flood run in the background
# beside other requests and start their own python3, as does any request
# when the server has gone.
_wc=$(mktemp -d)
mkfifo -m 0600 "$_wc/req" "$_wc/resp"
python3 "$here/webclient.py" serve "$_wc" </dev/null >"$_wc/log" 2>&1 &
_wc_pid=$!
trap 'kill "$_wc_pid" 2>/dev/null' EXIT
client() {
  local v code line
  case $1 in
  get | login | open | mint | visit | term) kill -0 "$_wc_pid" 2>/dev/null ;;
  *) false ;;
  esac || {
    python3 "$here/webclient.py" "$@"
    return
  }
  # the variables webclient.py reads (its docstring), as the caller has them
  {
    printf '%s\0' "$#" "$@"
    for v in AGENT_BOX_WEB_ADDR AGENT_BOX_WEB_SOURCE AGENT_BOX_EXTRA_COOKIES AGENT_BOX_WEB_DOMAIN; do
      if [ -n "${!v+set}" ]; then printf '%s=%s\0' "$v" "${!v}"; fi
    done
  } >"$_wc/req"
  read -r code <"$_wc/resp"
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <"$_wc/out"
  while IFS= read -r line || [ -n "$line" ]; do printf '%s\n' "$line"; done <"$_wc/err" >&2
  return "${code:-1}"
}
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
