#!/usr/bin/env bash
# Scenario "tampering" (golden configuration: two-users, alice and bob): what
# a hostile or careless agent user does to its own files cannot hang, kill
# or hijack agent-box. Inside alice's unit namespace: a FIFO swapped in for
# the registry, the registry removed and moved away, the whole config
# directory removed. From bob's login: a state.json naming a planted tmux,
# then root running the CLI on bob's home.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

cfg=/home/alice/.config/agent-box
for u in alice bob; do
  check "agent-box@$u is active" wait_until 120 systemctl is-active --quiet "$(unit $u)"
done
check "alice's seeded session main is live" wait_until 60 has_session alice main
check "alice's seeded session scratch is live" wait_until 60 has_session alice scratch

# registry_has NAME...: alice's registry is a regular file listing NAMEs.
registry_has() {
  [ -f "$cfg/sessions.json" ] && python3 -c '
import json, sys
names = {s["name"] for s in json.load(open(sys.argv[1]))["sessions"]}
missing = [n for n in sys.argv[2:] if n not in names]
print("registry lacks", missing) if missing else None
sys.exit(1 if missing else 0)' "$cfg/sessions.json" "$@"
}
same_pid() { [ "$(pane_pid alice "$1")" = "$2" ]; }
# stays_alive SECONDS NAME PID: the pane keeps its process for SECONDS.
stays_alive() {
  local end=$((SECONDS + $1))
  while [ "$SECONDS" -lt "$end" ]; do
    same_pid "$2" "$3" || {
      echo "pane $2 now runs pid '$(pane_pid alice "$2")', was $3"
      return 1
    }
    nap 0.2
  done
}
check "alice's registry is written" wait_until 30 registry_has main scratch

# phase: a FIFO in place of the registry, swapped in inside the unit
main_pid=$(pane_pid alice main)
scratch_pid=$(pane_pid alice scratch)
swap_fifo() { in_unit alice sh -c "cd '$cfg' && mkfifo .swap && mv -f .swap sessions.json && test -p sessions.json"; }
check "inside alice's unit a FIFO replaces the registry" swap_fifo
ls_refuses() {
  local rc=0
  timeout 10 runuser -u alice -- env HOME=/home/alice USER=alice "$(agent_box_bin alice)" session ls || rc=$?
  [ "$rc" -eq 7 ]
}
check "session ls reports the FIFO as corrupt (exit 7) at once" ls_refuses
# While the registry is unreadable the supervisor changes nothing (it does
# not know the user's intent). A session killed now is respawned as soon as
# the registry is readable again, which a supervisor blocked in open() on
# the FIFO would never do: removing the path does not release that open.
kill -9 "$scratch_pid"
check "the other session was not touched" stays_alive 2 main "$main_pid"
remove_fifo() { in_unit alice rm -f "$cfg/sessions.json"; }
check "the FIFO is removed" remove_fifo
check "the supervisor rebuilds the registry from the sessions it keeps" wait_until 30 registry_has main scratch
check "the session killed meanwhile is respawned" wait_until 30 pane_alive alice scratch "$scratch_pid"

# phase: the registry removed, then moved away
main_pid=$(pane_pid alice main)
scratch_pid=$(pane_pid alice scratch)
check "inside alice's unit the registry is removed" in_unit alice rm "$cfg/sessions.json"
check "no session dies when the registry is removed" stays_alive 3 main "$main_pid"
check "the removed registry is rebuilt" wait_until 30 registry_has main scratch
check "inside alice's unit the registry is moved away" in_unit alice mv "$cfg/sessions.json" /home/alice/sessions.json.bak
check "no session dies when the registry is moved away" stays_alive 3 scratch "$scratch_pid"
check "the moved registry is rebuilt" wait_until 30 registry_has main scratch

# phase: the whole config directory removed, then an add
# The supervisor may be writing into the directory while rm walks it (it
# rebuilds the registry it just lost), so one rm can fail with "Directory not
# empty"; a user's retry is what a real removal looks like, and each attempt
# that succeeds deletes the directory itself.
remove_cfg() {
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    in_unit alice rm -rf "$cfg" 2>/dev/null && { echo "removed on attempt $i"; return 0; }
    nap 0.1
  done
  in_unit alice rm -rf "$cfg"
}
check "inside alice's unit ~/.config/agent-box is removed" remove_cfg
add_late() { ab alice session add late --agent shell -- -c 'exec sleep 100000'; }
check "session add recreates it" add_late
# (the supervisor's safety-net resync runs every 5 minutes: a session that
# waited for it would take that long; here it took under a second)
check "the added session is live within a minute (no wait for the resync)" wait_until 60 has_session alice late
check "the earlier sessions kept their processes" same_pid main "$main_pid"

# phase: root's CLI on bob's home, after bob planted a tmux in state.json
bin=$(agent_box_bin bob)
plant() {
  as bob sh -c 'printf "#!/bin/sh\necho ran >> /home/bob/evil-ran\n" > /home/bob/evil.sh && chmod +x /home/bob/evil.sh' &&
    as bob python3 -c '
import json, os, sys
p = "/run/agent-box/bob/state.json"
s = json.load(open(p))
s["tmux"] = "/home/bob/evil.sh"
s["agents"] = {k: {"command": "/home/bob/evil.sh"} for k in s.get("agents", {})}
open(p + ".x", "w").write(json.dumps(s))
os.rename(p + ".x", p)'
}
check "bob plants a tmux in his state.json" plant
root_refused() {
  local rc=0 out
  out=$(env -i HOME=/home/bob USER=bob PATH=/usr/bin:/bin "$bin" session ls 2>&1) || rc=$?
  echo "$out"
  [ "$rc" -eq 11 ] && grep -q 'runuser -u bob -- agent-box' <<<"$out"
}
check "root running the CLI on bob's home is refused (exit 11, runuser hint)" root_refused
as_bob_ok() { runuser -u bob -- env -i HOME=/home/bob USER=bob PATH=/usr/bin:/bin "$bin" session ls; }
check "the hint's command works" as_bob_ok
no_evil() { [ ! -e /home/bob/evil-ran ]; }
check "the planted program never ran" no_evil

done_testing
