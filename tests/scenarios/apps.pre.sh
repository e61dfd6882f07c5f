#!/usr/bin/env bash
# Scenario "apps", first boot (golden configuration: web; a power cut
# follows). alice's app "records" is declared before its program exists:
# the unit runs and waits, never fails. Her agent writes the program (a
# record store, tests/scenarios/records.py) from inside its unit: the
# launcher starts it and it serves through the app's socket; kill -9 of the
# program or of the launcher brings it back; a crashing program is retried
# with growing delays, for ever. From inside the app nothing of alice's
# agents is in reach (tests/scenarios/appprobe.py); from alice's and bob's
# sessions nothing reaches the app but through its socket, which only root
# and Caddy's group may open. systemd 257 verifies and scores the units
# (the host's 252 does not know PrivatePIDs=). A record acknowledged right
# before the power cut is read back after it (apps.post.sh), and so is
# every webhook delivery acknowledged before it: deliveries run, one after
# another, until the harness cuts the power; the sender prints each
# acknowledged delivery's id as "# acked: ID" on this script's output
# (the harness's serial port, never the guest's disk), apps.post.sh prints
# every stored id as "# stored: ID", and the harness checks that each
# acknowledged one is among them. (One power cut serves both: a boot of
# the web golden takes half a minute here.)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
u=alice
app_unit() { echo "agent-box-app@$1--$u.service"; }
app_sock() { echo "/run/agent-box-app/$1--$u.sock"; }
status_has() { systemctl show -P StatusText "$(app_unit "$1")" | grep -qF -- "$2"; }
dir=/var/lib/agent-box-app-src/$u/records
rec=/var/lib/agent-box-test
mkdir -p "$rec"

# phase: the units under systemd 257
verify_quiet() {
  local out
  out=$(systemd-analyze verify "$(app_unit records)" "agent-box-app@records--$u.socket" 2>&1)
  echo "$out"
  [ -z "$out" ]
}
check "systemd-analyze verify (systemd $(systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p')) has nothing to say about the app's units" verify_quiet
exposure() {
  local out rc
  out=$(systemd-analyze security --threshold=20 "$(app_unit records)" 2>&1)
  rc=$?
  echo "$out" | grep -o 'Overall exposure level.*' | tee "$rec/exposure"
  [ "$rc" -eq 0 ] && [ -s "$rec/exposure" ]
}
check "the app's unit scores at most 2.0 in the guest's systemd-analyze security" exposure
note "measure: $(cat "$rec/exposure") (the guest's systemd, PrivatePIDs= counted)"

# phase: a slot before its program
check "the slot with no program is active" wait_active 60 "$(app_unit records)"
check "... and says it waits for its program" wait_until 20 status_has records "waiting for $dir/records.py"
nap 3
unit_is() { [ "$(systemctl show -P ActiveState "$(app_unit records)") $(systemctl show -P NRestarts "$(app_unit records)")" = "$1" ]; }
check "... and after 3 s it still waits, never restarted" unit_is "active 0"
check "the app's directory is alice's (0700), in a directory of root's (0755)" [ "$(stat -c '%U %a' "$dir" "$(dirname "$dir")" | tr '\n' ' ')" = "alice 700 root 755 " ]
check "the app's socket is root:caddy 0660" [ "$(stat -c '%U:%G %a' "$(app_sock records)")" = "root:caddy 660" ]
waiting_503() { curl -sS --max-time 10 --unix-socket "$(app_sock records)" http://app/records/x | grep -qF "waiting for $dir/records.py"; }
check "a request while it waits answers what it waits for" waiting_503

# phase: the agent writes the program
# The agent's view: inside alice's sessions unit, as alice. A client
# waits for the file and then asks every 20 ms (firstrequest.py).
python3 "$here/firstrequest.py" "$(app_sock records)" "$dir/records.py" /records/none >"$rec/first" 2>&1 &
first_pid=$!
waited_in=$(systemctl show -P InvocationID "$(app_unit records)")
nap 1
check "alice's agent writes records.py into the app's directory" in_unit $u cp "$here/records.py" "$dir/records.py"
serves() { [ "$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$(app_sock records)" http://app/records/none)" = 404 ]; }
first_answer() { wait "$first_pid"; cat "$rec/first"; [ "$(cut -d' ' -f2 "$rec/first")" = 404 ]; }
check "the app serves once its program is there" first_answer
# The launcher that waited starts the program when its file appears
# (inotify, then a settle time): once, in the same invocation of the unit,
# not after a restart. How soon is printed against the target (2 s); the
# first answer adds the program's own start (python3 with http.server,
# about a second under TCG). TestAWaitingAppStartsItsProgramWhenItAppears-
# AndServes (internal/runtime/apprun) proves the wake-up on the host.
started_ms() {
  local at
  at=$(journalctl -q -b -u "$(app_unit records)" -o short-unix | grep -m1 'started python3' | cut -d' ' -f1)
  [ -n "$at" ] && python3 -c 'import sys; print(round((float(sys.argv[1]) - float(sys.argv[2])) * 1000))' "$at" "$(cut -d' ' -f3 "$rec/first")"
}
started_once() {
  local n
  n=$(journalctl -q -b -u "$(app_unit records)" -o cat | grep -c 'started python3')
  echo "$n start(s); invocation $(systemctl show -P InvocationID "$(app_unit records)") (waited in $waited_in), $(systemctl show -P NRestarts "$(app_unit records)") restarts"
  [ "$n" = 1 ] && [ "$(systemctl show -P InvocationID "$(app_unit records)")" = "$waited_in" ] && unit_is "active 0"
}
check "the launcher that waited started it once, with no restart of the unit" started_once
note "measure: program started $(started_ms) ms, first request answered $(cut -d' ' -f1 "$rec/first") ms after the program's file was written (target: under 2 s)"
check "the status says it runs" status_has records "running python3"
body=$rec/record-a
head -c 65536 /dev/urandom >"$body"
put() { [ "$(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --unix-socket "$(app_sock records)" -X PUT --data-binary "@$2" "http://app/records/$1")" = 201 ]; }
same() { curl -sS --max-time 10 --unix-socket "$(app_sock records)" "http://app/records/$1" | cmp - "$2"; }
check "PUT /records/a stores 64 KiB of random bytes" put a "$body"
check "GET /records/a returns them byte for byte" same a "$body"
check "the record is in the app's state directory" cmp "/var/lib/agent-box-apps/$u/records/records/a" "$body"

# phase: nothing reaches the app but its socket
# connect_as USER WHERE: as USER inside USER's sessions unit, try the app's
# socket and the program's TCP port on the host's loopback.
refused() {
  in_unit "$1" python3 - "$(app_sock records)" <<'PY'
import socket, sys
for fam, addr in ((socket.AF_UNIX, sys.argv[1]), (socket.AF_INET, ("127.0.0.1", 8080))):
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.connect(addr)
    except OSError as e:
        print(f"{addr}: refused: {e}")
        continue
    print(f"{addr}: CONNECTED")
    sys.exit(1)
PY
}
check "from bob's session nothing connects to alice's app (socket, TCP)" refused bob
check "from alice's own session nothing connects to her app (socket, TCP)" refused alice

# phase: crashes
prog_pid() {
  local p cg
  cg=$(systemctl show -P ControlGroup "$(app_unit records)")
  [ -n "$cg" ] || return 1
  while read -r p; do
    [ "$(cat "/proc/$p/comm")" = python3 ] && echo "$p" && return
  done <"/sys/fs/cgroup$cg/cgroup.procs"
  return 1
}
old=$(prog_pid)
kill -9 "$old"
back() { local p; p=$(prog_pid) && [ "$p" != "$old" ] && serves; }
check "kill -9 of the program: it is back and serves" wait_until 20 back
check "... the status counts the restart" status_has records "restarts 1)"
check "... and the record is still there" same a "$body"
launcher=$(systemctl show -P MainPID "$(app_unit records)")
kill -9 "$launcher"
relaunched() { [ "$(systemctl show -P NRestarts "$(app_unit records)")" = 1 ] && serves; }
check "kill -9 of the launcher: systemd starts it again and the app serves" wait_until 30 relaunched

# From inside the app: the probe takes the program's place once.
targets() {
  printf 'tmux=%s\nsupervisor=%s\nagent=%s\n' "$(server_pid $u)" "$(main_pid $u)" "$(pane_pid $u main)" >"$dir/targets.txt" &&
    chown "$u" "$dir/targets.txt" && ! grep -q '=$' "$dir/targets.txt"
}
check "the probe's targets: the host pids of alice's tmux server, supervisor and session main's agent" targets
# What alice reaches on the host, generated here rather than listed by
# hand (a new socket or directory is covered without anyone remembering
# it): every socket she can connect to, every directory of hers, every
# directory anyone may write, each tried as alice outside the app; the
# app's own state and program directories, its private /tmp and systemd's
# own sockets (the journal, the notify socket) excepted.
token="agent-box-probe-$$-$RANDOM"
candidates() {
  find / -xdev \( -path /proc -o -path /sys -o -path /nix \) -prune -o -type s -print 2>/dev/null | grep -v '^/run/systemd/' | sed 's/^/socket /'
  find /run /dev/shm /var /home /tmp /etc -type s -print 2>/dev/null | grep -v '^/run/systemd/' | sed 's/^/socket /'
  # her topmost directories (what is under one falls with it)
  find / /run /dev/shm /var /home \( -path /proc -o -path /sys -o -path /nix \) -prune -o -type d -user "$u" -print 2>/dev/null |
    grep -v "^/var/lib/agent-box-apps/$u/records\(/\|\$\)\|^$dir\(/\|\$\)" | sort -u |
    awk 'top == "" || index($0, top "/") != 1 { print "dir " $0; top = $0 }'
  find / /run /dev/shm /var \( -path /proc -o -path /sys -o -path /nix -o -path /tmp -o -path /var/tmp \) -prune -o -type d -perm -0002 -print 2>/dev/null | sed 's/^/shared /'
}
reach() {
  candidates | sort -u | as $u python3 "$here/appprobe.py" --reachable >"$dir/reach.txt" &&
    printf '%s\n' "$token" >"$dir/token.txt" && chown "$u" "$dir/reach.txt" "$dir/token.txt" &&
    grep -qx "socket /run/agent-box-term/$u/ttyd.sock" "$dir/reach.txt" &&
    ! grep -qx "socket /run/agent-box-auth/status.sock" "$dir/reach.txt" &&
    grep -qx "dir /run/agent-box-term/$u" "$dir/reach.txt" &&
    grep -qx "dir /var/lib/agent-box-apps/$u/site" "$dir/reach.txt" &&
    grep -qx "shared /dev/shm" "$dir/reach.txt"
}
check "what alice reaches on the host, generated (her terminal's socket, her terminal's and a sibling app's directories, /dev/shm among them; not the status socket, whose group she lacks)" reach
note "alice reaches $(wc -l <"$dir/reach.txt") sockets and directories on the host: $(cut -d' ' -f2 "$dir/reach.txt" | paste -sd' ')"
in_unit $u cp "$dir/records.py" "$dir/records.py.saved"
in_unit $u cp "$here/appprobe.py" "$dir/records.py"
kill -9 "$(prog_pid)"
probed() { grep -qx 'done' "/var/lib/agent-box-apps/$u/records/probe.txt"; }
check "the probe ran inside the app" wait_until 30 probed
sed 's/^/# probe: /' "/var/lib/agent-box-apps/$u/records/probe.txt"
probe_says() { grep -qE "^$1: refused" "/var/lib/agent-box-apps/$u/records/probe.txt"; }
check "from inside the app: no connect to alice's tmux socket" probe_says "connect to the tmux socket"
check "... her runtime directory (control socket) out of reach" probe_says "list the user's runtime directory"
check "... no permission request through her supervisor's approval socket" probe_says "connect to the supervisor's approval socket"
check "... no read of ~/.config/agent-box/env" probe_says "read the env file"
for t in tmux supervisor agent; do
  check "... no read of the env file through /proc/<$t>/root" probe_says "read the env file through /proc/$t/root"
  check "... no read of /proc/<$t>/environ" probe_says "read /proc/$t/environ"
  check "... no ptrace of alice's $t" probe_says "ptrace $t"
  check "... no signal to alice's $t" probe_says "signal $t"
done
check "... the home cannot be written" probe_says "write the home"
check "... the app's own directory cannot be written" probe_says "write the app's directory"
check "... the system bus is out of reach" probe_says "connect to the system bus"
only_own() { grep '^processes: ' "/var/lib/agent-box-apps/$u/records/probe.txt" | grep -vqE 'tmux|sleep|bash|claude|codex|supervise'; }
check "... it sees no process but its own (its PID namespace)" only_own
check "... it has no capabilities" grep -qx 'CapEff: 0000000000000000' "/var/lib/agent-box-apps/$u/records/probe.txt"
check "... and its state directory is writable" grep -qx 'state directory: writable' "/var/lib/agent-box-apps/$u/records/probe.txt"
none_reached() { ! grep -E '^reach .*: POSSIBLE' "/var/lib/agent-box-apps/$u/records/probe.txt"; }
check "... none of what alice reaches on the host (every socket, directory of hers, a sibling app's state)" none_reached
tried() { [ "$(grep -c '^reach ' "/var/lib/agent-box-apps/$u/records/probe.txt")" -ge "$(grep -c . "$dir/reach.txt")" ]; }
check "... each of them tried" tried
leftover() { ! find / -xdev \( -path /proc -o -path /sys -o -path /nix \) -prune -o -name "$token" -print 2>/dev/null | grep . &&
  ! find /run /dev/shm -name "$token" -print 2>/dev/null | grep .; }
check "... and nothing it wrote into a directory anyone may write is the host's (/dev/shm, /run/lock, ...)" leftover
in_unit $u mv "$dir/records.py.saved" "$dir/records.py"
check "the record store is back after the probe" wait_until 30 serves

# A crashing program: retried with growing delays, for ever. A restart of
# the unit first, so that the count and the delay start from nothing.
in_unit $u sh -c "printf 'raise SystemExit(3)\n' >$dir/records.py"
since=$(date +%s)
systemctl restart "$(app_unit records)"
crashes() { journalctl -q -b --since "@$since" -u "$(app_unit records)" -o cat | grep -c 'exited with status 3 after'; }
retried() { [ "$(crashes)" -ge 6 ]; }
check "a crashing program keeps being retried (6 exits and more)" wait_until 60 retried
check "... the status says it backs off, with the last exit" status_has records "exited with status 3"
check "... the unit stays active, never failed, never restarted by systemd (no start limit)" unit_is "active 0"
delays() {
  journalctl -q -b --since "@$since" -u "$(app_unit records)" -o cat | grep -oE 'exited with status 3 after [^;]*; starting it again in [0-9.]+m?s' | sed 's/.* in //' | tr '\n' ' '
}
grown() { delays | grep -qE '^200ms 400ms 800ms 1\.6s 2s 2s'; }
check "... with delays 200ms 400ms 800ms 1.6s 2s (restartDelay doubling to restartDelayMax)" grown
note "delays: $(delays)"
in_unit $u cp "$here/records.py" "$dir/records.py"
check "the record store comes back within restartDelayMax" wait_until 30 serves

# The app's directory is alice's, in a directory of root's: her agent
# writes the program but can neither move the directory away nor put a
# symlink in its place (systemd would follow one, as root, when it binds
# the directory into the app).
cannot() {
  in_unit $u python3 - "$dir" <<'PY'
import os, sys
d = sys.argv[1]
for what, fn in (("move it away", lambda: os.rename(d, d + ".old")),
                 ("put a symlink beside it", lambda: os.symlink("/home/bob", os.path.dirname(d) + "/evil"))):
    try:
        fn()
    except PermissionError as e:
        print(f"{what}: refused ({e.strerror})")
        continue
    print(f"{what}: POSSIBLE")
    sys.exit(1)
PY
}
check "alice's agent can neither move the app's directory away nor add a symlink beside it" cannot

# phase: before the power cut
check "agent-box-hook@alice.socket listens" wait_active 60 agent-box-hook@alice.socket
# The count lives in /run (tmpfs): it only paces this script.
count=/run/agent-box-test-acked
rm -f "$count"
python3 "$here/hookclient.py" flood "https://box.localhost:8443/alice/hook/bulk" /etc/agent-box-demo/alice-bulk.hook 90 "$count" &
acked() { [ "$(cat "$count" 2>/dev/null || echo 0)" -ge "$1" ]; }
check "webhook deliveries are being acknowledged" wait_until 120 acked 30
head -c 4096 /dev/urandom >"$rec/record-durable"
check "a record PUT is acknowledged (201) right before the power cut" put durable "$rec/record-durable"
sync "$rec/record-durable" "$rec"
note "webhook deliveries acknowledged so far: $(cat "$count"); the power is cut after END, while they continue"
done_testing
