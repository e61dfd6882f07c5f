#!/usr/bin/env bash
# Scenario "durability", first boot (golden configuration: two-users):
# change state at run time, record it, then keep bob's registry busy while
# the harness cuts the power (the phase is marked "crash"). The second boot
# (durability.post.sh) checks what survived.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
rec=/var/lib/agent-box-test
mkdir -p "$rec"

for u in alice bob; do
  check "agent-box@$u is active" wait_until 120 systemctl is-active --quiet "$(unit $u)"
done
add_parked() { ab alice session add parked --agent shell && ab alice session stop parked; }
check "alice adds a session at run time" ab alice session add added --agent sleeper
check "alice adds a session and stops it (parked)" add_parked
# shellcheck disable=SC2016 # a literal value: nothing may expand it
secret='va"l $(x) %i ☃ =='
set_secret() { printf '%s\n' "$secret" | ab alice env set API_TOKEN; }
check "alice stores a secret" set_secret
check "the added session is live" wait_until 60 has_session alice added
record() {
  sha256sum /home/alice/.config/agent-box/sessions.json /home/alice/.config/agent-box/env >"$rec/alice.sums" &&
    printf '%s' "$secret" >"$rec/secret" &&
    sync "$rec/alice.sums" "$rec/secret" "$rec"
}
check "the registry and env file are recorded" record

# Keep bob's registry changing until the power is cut.
churn() {
  local i=0
  while true; do
    i=$((i + 1))
    ab bob session add "churn$i" --agent sleeper >/dev/null 2>&1
    ab bob session rm "churn$i" >/dev/null 2>&1
  done
}
churn &
busy() { [ -e "/home/bob/.local/state/agent-box/sessions/churn3.json" ] || ab bob session ls | grep -q churn; }
check "bob's registry is being rewritten continuously" wait_until 60 busy
note "power is cut after END"
done_testing
