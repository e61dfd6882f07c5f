#!/usr/bin/env bash
# Scenario "hooks", first boot (golden configuration: web): webhook
# deliveries run, one after another, until the harness cuts the power (the
# phase is marked "crash"). The sender prints every acknowledged delivery's
# id as "# acked: ID" on this script's output, which is the harness's serial
# port, never the guest's disk. The second boot (hooks.post.sh) prints every
# stored id as "# stored: ID", and the harness checks that each acknowledged
# one is among them.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

D=box.localhost:8443
check "caddy is active" wait_active 120 caddy.service
check "agent-box-hook@alice.socket listens" wait_active 60 agent-box-hook@alice.socket
check "agent-box@alice is active" wait_active 120 agent-box@alice.service
# The count lives in /run (tmpfs): it only paces this script.
count=/run/agent-box-test-acked
rm -f "$count"
python3 "$here/hookclient.py" flood "https://$D/alice/hook/bulk" /etc/agent-box-demo/alice-bulk.hook 90 "$count" &
acked() { [ "$(cat "$count" 2>/dev/null || echo 0)" -ge "$1" ]; }
check "deliveries are being acknowledged" wait_until 120 acked 30
note "acknowledged so far: $(cat "$count"); the power is cut after END, while deliveries continue"
done_testing
