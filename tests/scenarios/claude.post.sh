#!/usr/bin/env bash
# Scenario "claude", second boot on the same disk after a forced power-off:
# the session's agent starts again, resuming the conversation it had (the
# conversation file, fsynced, names it), so the next prompt carries the
# turns from before the power cut.
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
done_testing
