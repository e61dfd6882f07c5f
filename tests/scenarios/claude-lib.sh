# shellcheck shell=bash
# Helpers of the claude scenario's two boots (claude.pre.sh, claude.post.sh):
# ada's session `main` runs Claude Code and `cx` Codex against the scripted
# model, whose request log is $log. The helpers act on the session $s
# (`main` unless a script sets it). Sourced after lib.sh, by a script that
# sets here.
# shellcheck disable=SC2154 # here: the sourcing script's directory
u=ada
s=main
log=/var/log/scripted-model.jsonl
conv() { echo "/home/$u/.local/state/agent-box/conversations/$s.json"; }

model() { python3 "$here/model.py" "$log" "$@"; }
# requests_with TEXT: a request's newest user message is TEXT. Polled: a
# grep of the log answers "not yet" without starting python3 (0.2 to 0.5 s
# of the guest's one vCPU, which the agent being waited for needs); it
# cannot look for a text that the log holds escaped (JSON escapes <>&"\).
requests_with() {
  case $1 in
    *[\<\>\&\"\\]*) ;;
    *) grep -qF -- "$1" "$log" || return 1 ;;
  esac
  [ "$(model count "$1")" -ge 1 ]
}
# field KEY: a top-level string of the session's conversation file (which
# agent-box writes indented: top-level keys are the lines indented by two
# spaces); without python3, for the same reason.
field() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$(conv)" 2>/dev/null; }
agent_pid() { pane_pid $u $s; }
# ready: the agent shows its prompt line, ready for input (its footer:
# Claude's permission mode, Codex's shortcuts hint).
ready() { tmq $u capture-pane -p -t "=$s:" | grep -qE 'bypass permissions on|for shortcuts'; }
# type_line TEXT: type TEXT and Enter into the session, as a person would.
type_line() {
  tm $u send-keys -t "=$s:" -l "$1" && nap 0.5 && tm $u send-keys -t "=$s:" Enter
}
# say TEXT: type_line TEXT and wait until a request whose newest user
# message is TEXT reached the model. Keys typed while a starting agent
# sets up its terminal can be lost: when no request came within 20 s, press
# Enter again if the text waits in the input line, else type it again (at
# most three tries); then show the pane.
say() {
  local try
  for try in 1 2 3; do
    if [ "$try" = 1 ] || ! tmq $u capture-pane -p -t "=$s:" | grep -qF "$1"; then
      tm $u send-keys -t "=$s:" -l "$1"
      nap 0.5
    fi
    tm $u send-keys -t "=$s:" Enter
    if wait_until 20 requests_with "$1" >/dev/null 2>&1; then
      return 0
    fi
  done
  tmq $u capture-pane -p -t "=$s:" | tail -n 15 | sed 's/^/pane: /'
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
# came_back OLD-PID: the session runs a new agent that shows its prompt
# line (Codex reports its conversation only at its next turn).
came_back() {
  local p
  p=$(agent_pid)
  [ -n "$p" ] && [ "$p" != "$1" ] && ready
}
# kill_agent: kill -9 the session's agent; sets old and rep for respawned.
# shellcheck disable=SC2034 # old and rep are the caller's
kill_agent() {
  old=$(agent_pid)
  rep=$(field reported)
  kill -9 "$old"
}
# note_has TEXT: `session ls` says TEXT about the session (on stderr).
note_has() { ab $u session ls 2>&1 >/dev/null | grep -F "session $s: " | grep -qF "$1"; }
# journal_has TEXT: agent-box logged TEXT as the user (exec-session and the
# hook log through journald's native socket: journald files a line under
# the sessions unit only while its sender still lives, and an agent that
# dies at once takes its exec-session's unit with it).
journal_has() { journalctl -q -b SYSLOG_IDENTIFIER=agent-box _UID="$(id -u $u)" | grep -qF "$1"; }
# in_transcript TEXT: the session's reported transcript holds TEXT.
in_transcript() { grep -qF "$1" "$(field transcript)"; }
# moved_from ID: the session's conversation is another one than ID.
moved_from() { local id; id=$(field id); [ -n "$id" ] && [ "$id" != "$1" ]; }
