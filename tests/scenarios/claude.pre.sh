#!/usr/bin/env bash
# Scenario "claude", first boot (golden configuration: claude; a power cut
# follows, then claude.post.sh on the same disk): the real Claude Code,
# pinned, against the scripted model (internal/scriptedmodel, its request
# log in $log). ada's seed session `main` starts headless with a kickoff
# prompt that asks for a shell command; the command runs with no keypress;
# the conversation is resumed after a kill -9 of the agent and after a
# restart of the sessions unit; a `claude -p` that the agent runs inside
# its session does not move the session's conversation; /clear moves it;
# a deleted transcript and `restart --fresh` start a new one, said by
# `session ls`; a FIFO at ~/.claude.json is left alone and reported. Last,
# a prompt the next boot's agent must remember.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
u=ada
log=/var/log/scripted-model.jsonl
conv=/home/$u/.local/state/agent-box/conversations/main.json
prompt="run: echo kickoff > /home/$u/kickoff.txt"

model() { python3 "$here/model.py" "$log" "$@"; }
requests_with() { [ "$(model count "$1")" -ge 1 ]; }
# field KEY: a top-level string of the session's conversation file.
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$conv" "$1" 2>/dev/null; }
agent_pid() { pane_pid $u main; }
# ready: the agent shows its prompt line, ready for input (its footer).
ready() { tm $u capture-pane -p -t =main: | grep -q 'bypass permissions on'; }
# say TEXT: type TEXT and Enter into the session, as a person would.
say() {
  tm $u send-keys -t =main: -l "$1" && nap 0.5 && tm $u send-keys -t =main: Enter
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
kill_agent() {
  old=$(agent_pid)
  rep=$(field reported)
  kill -9 "$old"
}
# note_has TEXT: `session ls` says TEXT about a session (on stderr).
note_has() { ab $u session ls 2>&1 >/dev/null | grep -qF "$1"; }
# journal_has TEXT: the sessions unit's journal holds TEXT.
journal_has() { journalctl -q -u "$(sessions_unit $u)" | grep -qF "$1"; }
# moved_from ID: the session's conversation is another one than ID.
moved_from() { local id; id=$(field id); [ -n "$id" ] && [ "$id" != "$1" ]; }

# phase: headless start, the kickoff prompt, a tool without a keypress
wait_active 60 "$(sessions_unit $u)"
check "the kickoff prompt's command ran with no keypress" wait_until 240 grep -qx kickoff /home/$u/kickoff.txt
check "the kickoff prompt is the newest user message of exactly one request" [ "$(model count "$prompt")" = 1 ]
check "the agent reported its conversation (SessionStart hook)" wait_until 30 test -n "$(field id)"
id1=$(field id)
check "its transcript is where it said" test -f "$(field transcript)"
check "the guide reached the model (the host's line of the managed CLAUDE.md)" model grep "Guide marker for the tests"
check ".claude.json: onboarding done, the folder trusted, the key approved" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["hasCompletedOnboarding"] is True
assert c["projects"]["/home/ada"]["hasTrustDialogAccepted"] is True
assert len(c["customApiKeyResponses"]["approved"]) == 1' /home/$u/.claude.json

# phase: resume after the agent's death
check "the agent is ready for input" wait_until 60 ready
say "hello one"
check "a typed prompt reaches the model" wait_until 60 requests_with "hello one"
kill_agent
check "the agent comes back after kill -9" wait_until 120 respawned "$old" "$rep"
say "after kill"
check "the next prompt after kill -9 carries the earlier turns" wait_until 60 model carries "after kill" "hello one"
check "the session keeps its conversation id" [ "$(field id)" = "$id1" ]
old=$(agent_pid)
rep=$(field reported)
systemctl restart "$(sessions_unit $u)"
check "the agent comes back after the sessions unit's restart" wait_until 120 respawned "$old" "$rep"
say "after restart"
check "after the restart the next prompt carries the earlier turns" wait_until 60 model carries "after restart" "hello one"

# phase: what does not move the conversation, and what does
say "run: claude -p nested-call"
check "a claude -p inside the session ran" wait_until 120 requests_with "nested-call"
check "... and its turn ended" wait_until 60 model carries "run: claude -p nested-call" "tool_result"
check "the claude -p's report reached agent-box and was refused" journal_has "ignored the report of conversation"
check "a claude -p inside the session does not move the session's conversation" [ "$(field id)" = "$id1" ]
say "/clear"
check "/clear moves the session to the new conversation" wait_until 60 moved_from "$id1"
id2=$(field id)
kill_agent
check "after /clear and a respawn the agent comes back" wait_until 120 respawned "$old" "$rep"
check "... resuming the new conversation" [ "$(field id)" = "$id2" ]
check "... said in the journal" wait_until 10 journal_has "resuming conversation $id2"

rm -f "$(field transcript)"
kill_agent
check "with its transcript deleted the agent starts afresh" wait_until 120 respawned "$old" "$rep"
check "... and session ls says so" wait_until 10 note_has "started fresh: the transcript"
old=$(agent_pid)
rep=$(field reported)
check "restart --fresh is accepted" ab $u session restart --fresh main
check "restart --fresh starts a new conversation" wait_until 120 respawned "$old" "$rep"
check "... and session ls says it was asked for" wait_until 10 note_has "asked for (restart --fresh)"

# phase: a hostile ~/.claude.json is left alone
mv /home/$u/.claude.json /home/$u/.claude.json.saved
as $u mkfifo /home/$u/.claude.json
kill_agent
check "a FIFO at ~/.claude.json is left alone and logged" wait_until 60 journal_has "is not a regular file"
check "... and session ls says so" wait_until 10 note_has ".claude.json left alone"
check "... and still a FIFO" test -p /home/$u/.claude.json
rm -f /home/$u/.claude.json
mv /home/$u/.claude.json.saved /home/$u/.claude.json

# phase: before the power cut
kill_agent
check "with ~/.claude.json back the agent comes back" wait_until 120 respawned "$old" "$rep"
say "before the power cut"
check "a prompt before the power cut reaches the model" wait_until 60 requests_with "before the power cut"
check "... and its reply is in the transcript" wait_until 30 grep -q "before the power cut" "$(field transcript)"
mkdir -p /var/lib/agent-box-test
field id > /var/lib/agent-box-test/claude-id
# Claude Code's transcript is the vendor's to make durable; agent-box's
# conversation file is fsynced on every write. Flush the rest so that the
# next boot tests the resume, not Claude's write-back.
sync
done_testing
