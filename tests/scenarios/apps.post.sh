#!/usr/bin/env bash
# Scenario "apps", second boot on the same disk after a forced power-off:
# the app starts again by itself and the record acknowledged right before
# the power cut is there, byte for byte (its program fsyncs before it
# answers; its state directory survives).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
u=alice
unit=agent-box-app@records--$u.service
sock=/run/agent-box-app/records--$u.sock
rec=/var/lib/agent-box-test
serves() { [ "$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$sock" http://app/records/none)" = 404 ]; }
check "after the power cut the app's unit is active" wait_active 120 "$unit"
check "... and serves" wait_until 60 serves
same() { curl -sS --max-time 10 --unix-socket "$sock" "http://app/records/$1" | cmp - "$2"; }
check "the record acknowledged right before the power cut is there byte for byte" same durable "$rec/record-durable"
check "... and so is the one stored before it" same a "$rec/record-a"
done_testing
