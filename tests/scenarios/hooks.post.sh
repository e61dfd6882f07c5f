#!/usr/bin/env bash
# Scenario "hooks", second boot on the same disk after a forced power-off
# in the middle of webhook deliveries: the web daemon starts (socket
# activation) with what the disk holds, no unfinished write is left, every
# stored delivery is whole, and every stored id is printed as
# "# stored: ID" for the harness, which checks that each id acknowledged
# before the power cut is among them.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

D=box.localhost:8443
dir=/home/alice/.local/state/agent-box/hooks/bulk
check "caddy is active after the power cut" wait_active 120 caddy.service
check "agent-box-hook@alice.socket listens" wait_active 60 agent-box-hook@alice.socket
# The first delivery starts the web daemon, which opens the folder.
after() { python3 "$here/hookclient.py" send "https://$D/alice/hook/bulk" /etc/agent-box-demo/alice-bulk.hook '{"after":"the power cut"}' | grep -q '^status 202$'; }
check "a delivery after the power cut gets 202" after
no_tmp() { ! find "$dir" -maxdepth 1 -name '.tmp-*' | grep -q .; }
check "no unfinished write is left in the folder" no_tmp
whole() {
  python3 - "$dir" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
bad = 0
for name in sorted(os.listdir(d)):
    if not name.endswith(".json"):
        continue
    try:
        doc = json.load(open(os.path.join(d, name)))
        ok = doc["id"] + ".json" == name and doc["id"].endswith("-" + doc["sha256"][:32]) and "body" in doc
    except (ValueError, KeyError) as e:
        ok = False
    if not ok:
        bad += 1
        print(f"not whole: {name}")
sys.exit(1 if bad else 0)
PY
}
check "every stored delivery is whole JSON naming its body's hash" whole
n=0
for f in "$dir"/*.json; do
  id=$(basename "$f" .json)
  echo "# stored: $id"
  n=$((n + 1))
done
note "stored deliveries: $n"
done_testing
