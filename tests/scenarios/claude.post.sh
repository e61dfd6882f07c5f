#!/usr/bin/env bash
# Scenario "claude", second boot on the same disk after a forced power-off:
# the session's agent starts again, resuming the conversation it had (the
# conversation file, fsynced, names it), so the next prompt carries the
# turns from before the power cut.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
u=ada
log=/var/log/scripted-model.jsonl
conv=/home/$u/.local/state/agent-box/conversations/main.json

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$conv" "$1" 2>/dev/null; }
ready() { tm $u capture-pane -p -t =main: | grep -q 'bypass permissions on'; }
resumed() { journalctl -q -b -u "$(sessions_unit $u)" | grep -qF "resuming conversation $(cat /var/lib/agent-box-test/claude-id)"; }
carries() { python3 "$here/model.py" "$log" carries "$1" "$2"; }

wait_active 60 "$(sessions_unit $u)"
check "after the power cut the agent resumes its conversation" wait_until 120 resumed
check "... and is ready for input" wait_until 120 ready
tm $u send-keys -t =main: -l "after the power cut" && nap 0.5 && tm $u send-keys -t =main: Enter
check "the next prompt carries the turns from before the power cut" wait_until 60 carries "after the power cut" "before the power cut"
check "the session keeps its conversation id" [ "$(field id)" = "$(cat /var/lib/agent-box-test/claude-id)" ]
done_testing
