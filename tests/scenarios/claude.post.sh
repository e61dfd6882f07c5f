#!/usr/bin/env bash
# Scenario "claude", second boot on the same disk after a forced power-off:
# the session's agent starts again, resuming the conversation it had (the
# conversation file, fsynced, names it), so the next prompt carries the
# turns from before the power cut: Claude Code's (session main) and
# Codex's (session cx). Then the attention states (docs/runtime-contract.md,
# "Attention"): a shell session's silence after output (this golden's
# silenceAfter, 2 s) and bell, ended by a person attaching; a Claude Code
# session in a mode that asks (`--permission-mode manual` after the
# profile's) waiting for a permission, then working and finished once
# the person says yes. Last, a session limited before the power cut
# resumes after it (the stand-in agent `limiter`).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=claude-lib.sh
. "$here/claude-lib.sh"
saved_id() { cat /var/lib/agent-box-test/claude-id; }
resumed() { journal_has "resuming conversation $(saved_id)"; }

wait_active 60 "$(sessions_unit $u)"
note "measure: the stand-in limited before the power cut, at the boot: $(ab $u session ls | awk '$1 == "lp"')"
check "after the power cut the agent resumes its conversation" wait_until 120 resumed
check "... and is ready for input" wait_until 120 ready
check "the agent takes a prompt after the power cut" say "after the power cut"
check "... and the request carries the turns from before the power cut" wait_until 30 model carries "after the power cut" "before the power cut"
check "the session keeps its conversation id" [ "$(field id)" = "$(saved_id)" ]
s=cx
codex_id() { cat /var/lib/agent-box-test/codex-id; }
codex_resumed() { journal_has "resuming conversation $(codex_id)"; }
check "Codex: after the power cut the agent resumes its conversation" wait_until 120 codex_resumed
check "... and is ready for input" wait_until 120 ready
check "Codex: the agent takes a prompt after the power cut" say "codex after the power cut"
check "... and the request carries the turns from before the power cut" wait_until 30 model carries "codex after the power cut" "codex before the power cut"
check "Codex: the session keeps its conversation id" [ "$(field id)" = "$(codex_id)" ]

# phase: attention states
# attention_of NAME: the session's attention state as session ls --json
# shows it ("state (reason)"; "-" for none).
attention_of() {
  ab $u session ls --json | python3 -c '
import json, sys
s = [x for x in json.load(sys.stdin) if x["name"] == sys.argv[1]]
a = s[0].get("attention") if s else None
print("-" if not a else a["state"] + (" (" + a["reason"] + ")" if a.get("reason") else ""))' "$1"
}
attention_is() { [ "$(attention_of "$1")" = "$2" ]; }
ab $u session add att --agent shell
check "a shell's prompt followed by 2 s of silence, nobody looking: finished (silence)" wait_until 60 attention_is att "finished (silence)"
t0=$(now_ms)
tm $u send-keys -t "=att:" "printf '\\a'" Enter
check "its terminal bell: needs-you (bell)" wait_until 10 attention_is att "needs-you (bell)"
note "bell typed -> needs-you in session ls: $(($(now_ms) - t0)) ms (tmux evaluates its subscription once a second)"
attached() { [ "$(tmq $u list-clients -t =att | wc -l)" -ge 1 ]; }
as $u script -qfec "$(agent_box_bin $u) session attach att" /dev/null >/dev/null 2>&1 &
spid=$!
check "a person attaches" wait_until 20 attached
check "... which ends the bell's needs-you: working" wait_until 10 attention_is att working
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null || true

ask_prompt="run: echo asked > /home/$u/asked.txt"
ab $u session add ask --agent claude --prompt "$ask_prompt" -- --permission-mode manual
check "Claude in a mode that asks: the kickoff reached the model" wait_until 240 requests_with "$ask_prompt"
t0=$(now_ms)
check "... the agent waits for a permission: needs-you (permission)" wait_until 60 attention_is ask "needs-you (permission)"
note "the model's tool call -> needs-you (permission) in session ls: $(($(now_ms) - t0)) ms (includes Claude's own time to ask)"
asks() { tmq $u capture-pane -p -t "=ask:" | grep -qi 'proceed'; }
check "... and shows its question" wait_until 30 asks
check "nothing ran before the yes" test ! -e /home/$u/asked.txt
tm $u send-keys -t "=ask:" Enter
check "the person says yes: the command runs" wait_until 60 test -s /home/$u/asked.txt
check "... and the turn ends: finished (turn)" wait_until 60 attention_is ask "finished (turn)"
ask_states() { journalctl -q -b -u "$(unit $u)" -o cat | sed -n 's/.*session "ask": //p' | tail -n 3 | paste -sd '|'; }
ask_states_are() { [ "$(ask_states)" = "$1" ]; }
check "the supervisor logged needs-you, working (the tool ran after the yes), finished" wait_until 10 ask_states_are "needs-you (permission)|working|finished (turn)"
ab $u session rm ask
ab $u session rm att

# phase: a usage limit's try across the power cut (claude.pre.sh's last
# session, lp, limited by the stand-in agent with a reset Tp a minute
# after): this boot's supervisor took the schedule from the observation
# file and resumed lp in its conversation, once, not before Tp.
read -r Tp lp_id </var/lib/agent-box-test/limited-lp
kept() { journal_has 'session "lp": limited until' && journal_has 'kept from before the supervisor started (the try at '; }
check "the supervisor kept the try booked before the power cut" kept
lp_resumed() {
  [ "$(awk -v id="$lp_id" '$2 == "lp" && $3 == id && $4 == "resume" && $5 == "continue" && $1 >= '"$Tp"'' /home/$u/.limiter/log | wc -l)" = 1 ]
}
check "... and resumed lp after the boot, in its conversation, once, not before its reset" wait_until 90 lp_resumed
check "... which this boot's supervisor logged" journal_has 'session "lp": resuming its conversation after the usage limit (try 1, '
ab $u session rm lp
done_testing
