#!/usr/bin/env bash
# Scenario "claude", second boot on the same disk after a forced power-off:
# the session's agent starts again, resuming the conversation it had (the
# conversation file, fsynced, names it), so the next prompt carries the
# turns from before the power cut: Claude Code's (session main) and
# Codex's (session cx).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=claude-lib.sh
. "$here/claude-lib.sh"
saved_id() { cat /var/lib/agent-box-test/claude-id; }
resumed() { journal_has "resuming conversation $(saved_id)"; }

wait_active 60 "$(sessions_unit $u)"
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
done_testing
