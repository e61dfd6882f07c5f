#!/usr/bin/env bash
# Scenario "durability", second boot on the same disk after a forced
# power-off: what was added, stopped and stored at run time survived byte for
# byte; parked sessions stay parked, the others came back; the registry
# write the power cut interrupted did not replace bob's good registry.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
rec=/var/lib/agent-box-test

for u in alice bob; do
  check "agent-box@$u is active after the power cut" wait_until 120 systemctl is-active --quiet "$(unit $u)"
done
check "alice's registry and env file survived byte for byte" sha256sum -c "$rec/alice.sums"
secret_intact() { [ "$(cat "$rec/secret")" = "$(sed -n 's/^API_TOKEN=//p' /home/alice/.config/agent-box/env)" ]; }
check "the secret reads back exactly" secret_intact
check "the session added at run time is live again" wait_until 60 has_session alice added
check "the seeded sessions are live again" wait_until 60 has_session alice main
check "the parked session stays parked" session_is alice parked stopped
no_parked() { ! has_session alice parked; }
check "the parked session has no tmux session" no_parked
bob_valid() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["version"] == 1; assert any(s["name"] == "shell" for s in d["sessions"])' \
    /home/bob/.config/agent-box/sessions.json
}
check "bob's registry is valid JSON with its seeded session (never a torn write)" bob_valid
check "bob's CLI reads the registry" ab bob session ls
check "bob's seeded session is live again" wait_until 60 has_session bob shell
done_testing
