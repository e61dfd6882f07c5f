#!/usr/bin/env bash
# Scenario "isolation" (golden configuration: two-users, alice and bob): a
# Linux user is the security boundary. Bob cannot reach alice's tmux,
# registry, env file or processes; the unit's processes have no privileges;
# inside the unit only the own home is writable (and visible).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

for u in alice bob; do
  check "agent-box@$u is active" wait_until 120 systemctl is-active --quiet "$(unit $u)"
done
check "alice's seeded session main is live" wait_until 60 has_session alice main
check "alice's seeded session scratch is live" wait_until 60 has_session alice scratch
# A secret for alice, to prove bob cannot read it.
set_secret() { printf 'hunter2\n' | ab alice env set TOKEN; }
check "alice stores a secret with env set" set_secret

# phase: bob against alice, from a login
alice_sock=$(runtime_dir alice)/tmux.sock
bob_tmux=$(tmux_bin bob)
bob_cannot_list() { ! as bob "$bob_tmux" -S "$alice_sock" list-sessions; }
bob_cannot_attach() { ! as bob script -qfec "$bob_tmux -S $alice_sock attach -t =main" /dev/null </dev/null; }
bob_cannot_read() { ! as bob cat "/home/alice/.config/agent-box/$1"; }
bob_cannot_signal() {
  local pid
  pid=$(pane_pid alice main)
  [ -n "$pid" ] && ! as bob kill -0 "$pid"
}
bob_cli_sees_nothing() {
  local out
  out=$(as bob env AGENT_BOX_RUNTIME_DIR="$(runtime_dir alice)" "$(agent_box_bin bob)" session ls --json 2>&1)
  echo "$out"
  ! grep -Eq '"(main|scratch)"' <<<"$out"
}
check "bob cannot list alice's tmux sessions" bob_cannot_list
check "bob cannot attach to alice's tmux" bob_cannot_attach
check "bob cannot read alice's registry" bob_cannot_read sessions.json
check "bob cannot read alice's env file" bob_cannot_read env
check "bob cannot signal alice's session processes" bob_cannot_signal
check "bob's CLI pointed at alice's runtime dir shows none of alice's sessions" bob_cli_sees_nothing
files_private() {
  [ "$(stat -c %a /home/alice/.config/agent-box/sessions.json)" = 600 ] &&
    [ "$(stat -c %a /home/alice/.config/agent-box/env)" = 600 ]
}
check "alice's registry and env file are 0600" files_private

# phase: privileges of the unit's processes
no_privs() {
  local s
  s=$(cat "/proc/$1/status")
  if grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$s" &&
    grep -q '^CapEff:[[:space:]]*0000000000000000$' <<<"$s" &&
    grep -q '^CapBnd:[[:space:]]*0000000000000000$' <<<"$s"; then
    return 0
  fi
  grep -E '^(NoNewPrivs|CapEff|CapBnd)' <<<"$s"
  return 1
}
check "the supervisor has NoNewPrivs and no capabilities" no_privs "$(main_pid alice)"
check "the tmux server has NoNewPrivs and no capabilities" no_privs "$(server_pid alice)"
check "a session's agent has NoNewPrivs and no capabilities" no_privs "$(pane_pid alice main)"

# phase: inside the unit (a session of alice runs the probes)
# shellcheck disable=SC2016 # the script runs later, inside the session
probe='r=~/isolation.txt; : > "$r"
t() { if eval "$2" >/dev/null 2>&1; then echo "$1 yes" >> "$r"; else echo "$1 no" >> "$r"; fi; }
t home "touch ~/ok-file"
t ownhome "ls /home/alice"
t etc "touch /etc/agent-box-probe"
t usr "touch /usr/agent-box-probe"
t var "touch /var/tmp/agent-box-probe"
t root "touch /root/agent-box-probe"
t bobhome "ls /home/bob"
t tmp "touch /tmp/agent-box-probe"
t ownproc "stat -c %U /proc/\$\$ | grep -qx alice"
t proc "for p in /proc/[0-9]*; do stat -c %U \"\$p\"; done | grep -qvx alice"
echo done >> "$r"'
check "a probe session runs inside alice's unit" run_session alice isolation "$probe"
result() { grep -qx "$1 $2" /home/alice/isolation.txt || cat /home/alice/isolation.txt; }
check "inside the unit the home is writable" result home yes
check "inside the unit the own home is listable (control for the next checks)" result ownhome yes
check "inside the unit /etc is read-only" result etc no
check "inside the unit /usr is read-only" result usr no
check "inside the unit /var is read-only" result var no
check "inside the unit /root is out of reach" result root no
check "inside the unit bob's home is not even visible" result bobhome no
check "inside the unit /tmp is private but writable" result tmp yes
check "inside the unit the own processes are visible in /proc (control)" result ownproc yes
check "inside the unit other users' processes are invisible" result proc no
no_leak() { [ ! -e /tmp/agent-box-probe ]; }
check "the unit's /tmp is not the host's" no_leak

done_testing
