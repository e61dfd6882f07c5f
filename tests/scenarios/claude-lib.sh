# shellcheck shell=bash
# Helpers of the claude scenario's two boots (claude.pre.sh, claude.post.sh):
# ada's session `main` runs Claude Code against the scripted model, whose
# request log is $log. Sourced after lib.sh, by a script that sets here.
# shellcheck disable=SC2154 # here: the sourcing script's directory
u=ada
log=/var/log/scripted-model.jsonl
conv=/home/$u/.local/state/agent-box/conversations/main.json

model() { python3 "$here/model.py" "$log" "$@"; }
requests_with() { [ "$(model count "$1")" -ge 1 ]; }
# field KEY: a top-level string of the session's conversation file.
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$conv" "$1" 2>/dev/null; }
agent_pid() { pane_pid $u main; }
# ready: the agent shows its prompt line, ready for input (its footer).
ready() { tm $u capture-pane -p -t =main: | grep -q 'bypass permissions on'; }
# type_line TEXT: type TEXT and Enter into the session, as a person would.
type_line() {
  tm $u send-keys -t =main: -l "$1" && nap 0.5 && tm $u send-keys -t =main: Enter
}
# say TEXT: type_line TEXT and wait until a request whose newest user
# message is TEXT reached the model. Keys typed while a starting agent
# sets up its terminal can be lost: when no request came within 20 s, press
# Enter again if the text waits in the input line, else type it again (at
# most three tries); then show the pane.
say() {
  local try
  for try in 1 2 3; do
    if [ "$try" = 1 ] || ! tm $u capture-pane -p -t =main: | grep -qF "$1"; then
      tm $u send-keys -t =main: -l "$1"
      nap 0.5
    fi
    tm $u send-keys -t =main: Enter
    if wait_until 20 requests_with "$1" >/dev/null 2>&1; then
      return 0
    fi
  done
  tm $u capture-pane -p -t =main: | tail -n 15 | sed 's/^/pane: /'
  return 1
}
# respawned OLD-PID OLD-REPORT: the session runs a new agent, which
# reported its conversation (a newer report than OLD-REPORT) and shows its
# prompt line.
respawned() {
  local p
  p=$(agent_pid)
  [ -n "$p" ] && [ "$p" != "$1" ] && [ "$(field reported)" != "$2" ] && ready
}
# kill_agent: kill -9 the session's agent; sets old and rep for respawned.
# shellcheck disable=SC2034 # old and rep are the caller's
kill_agent() {
  old=$(agent_pid)
  rep=$(field reported)
  kill -9 "$old"
}
# note_has TEXT: `session ls` says TEXT about a session (on stderr).
note_has() { ab $u session ls 2>&1 >/dev/null | grep -qF "$1"; }
# journal_has TEXT: agent-box logged TEXT as the user (exec-session and the
# hook log through journald's native socket: journald files a line under
# the sessions unit only while its sender still lives, and an agent that
# dies at once takes its exec-session's unit with it).
journal_has() { journalctl -q -b SYSLOG_IDENTIFIER=agent-box _UID="$(id -u $u)" | grep -qF "$1"; }
# moved_from ID: the session's conversation is another one than ID.
moved_from() { local id; id=$(field id); [ -n "$id" ] && [ "$id" != "$1" ]; }
