#!/usr/bin/env bash
# Scenario "lifecycle" (golden configuration: two-users): agents outlive
# their supervisor. An agent of alice's that appends a counter to a file
# every 0.1 s keeps its pid and an unbroken count across a restart of the
# supervisor, a kill -9 of it, a switch to a second build of agent-box with
# a changed agents table and environment (a session started after it sees
# the new value, the running agent keeps the old one and says "restart to
# apply"), and the switch back; then the one documented stop command
# (systemctl stop agent-box-alice.slice) leaves no process and no cgroup of
# alice's, bob runs on, and starting the supervisor brings alice back.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
u=alice
rec=/var/lib/agent-box-test
mkdir -p "$rec"

# offline_switch next|base (switch_to, in the offline tier): the second
# configuration is alice's drop-ins with a second environment (the harness
# installs it beside the first, under the hash of ones: the same programs
# and the second build of agent-box, so every path is new, as a rebuild
# makes them), its agents table and LIFECYCLE=new. A changed
# unit is then handled as switch-to-configuration handles it: not at all if
# its files say X-RestartIfChanged=false; restarted after daemon-reload if
# they say X-StopIfChanged=false; otherwise stopped before the new files are
# in place and started after.
# service_false KEY < UNIT-TEXT: the unit's [Service] section sets KEY=false
# (the last assignment wins; switch-to-configuration reads these keys there).
service_false() {
  awk -v key="$1" '
    /^\[/ { service = ($0 == "[Service]") }
    service && index($0, key "=") == 1 { v = substr($0, length(key) + 2) }
    END { exit v == "false" ? 0 : 1 }'
}
offline_switch() {
  local sys=/etc/systemd/system unit f
  local -a units=("$(unit $u)" "$(sessions_unit $u)") stop=() restart=()
  local -A new=()
  for unit in "${units[@]}"; do
    f="$sys/$unit.d/overrides.conf"
    [ -e "$rec/base-$unit.conf" ] || cp "$f" "$rec/base-$unit.conf"
    new[$unit]=$(cat "$rec/base-$unit.conf")
  done
  if [ "$1" = next ]; then
    local env0 env1 agents0 agents1
    env0=$(sed -n 's|^ExecStart=\(/nix/store/[^/]*\)/bin/agent-box supervise$|\1|p' "$rec/base-$(unit $u).conf")
    env1="/nix/store/11111111111111111111111111111111-${env0#/nix/store/*-}"
    agents0=$(sed -n 's|^Environment="AGENT_BOX_AGENTS=\(.*\)"$|\1|p' "$rec/base-$(unit $u).conf")
    agents1="/nix/store/11111111111111111111111111111111-${agents0#/nix/store/*-}"
    [ -n "$env0" ] && [ -n "$agents0" ] && [ -x "$env1/bin/agent-box" ] || return 1
    sed "s|$env0|$env1|g" "$agents0" >"$agents1" || return 1
    for unit in "${units[@]}"; do
      new[$unit]=$(printf '%s\n' "${new[$unit]}" | sed "s|$env0|$env1|g; s|$agents0|$agents1|g")
    done
    new[$(unit $u)]+=$'\nEnvironment="LIFECYCLE=new"'
  fi
  for unit in "${units[@]}"; do
    f="$sys/$unit.d/overrides.conf"
    [ "$(cat "$f")" != "${new[$unit]}" ] || continue
    local merged
    merged=$(cat "$sys/${unit%@*}@.${unit##*.}" && printf '%s\n' "${new[$unit]}")
    if service_false X-RestartIfChanged <<<"$merged"; then
      note "switch: $unit changed; not restarted (X-RestartIfChanged=false)"
    elif service_false X-StopIfChanged <<<"$merged"; then
      restart+=("$unit")
    else
      stop+=("$unit")
    fi
  done
  [ "${#stop[@]}" -eq 0 ] || systemctl stop "${stop[@]}" || return 1
  for unit in "${units[@]}"; do
    printf '%s\n' "${new[$unit]}" >"$sys/$unit.d/overrides.conf" || return 1
  done
  systemctl daemon-reload || return 1
  note "switch: restart ${restart[*]:-nothing}; start ${stop[*]:-nothing}"
  [ "${#restart[@]}" -eq 0 ] || systemctl restart "${restart[@]}" || return 1
  [ "${#stop[@]}" -eq 0 ] || systemctl start "${stop[@]}"
}

check "agent-box@$u is active" wait_active 120 "$(unit $u)"

# phase: an agent that counts
count=/home/$u/counter
# shellcheck disable=SC2016 # the script runs later, inside the session
counter='echo "${LIFECYCLE-unset}" > ~/counter.env; i=0; while :; do i=$((i + 1)); echo "$i" >> ~/counter; sleep 0.1; done'
check "alice adds the counting agent" ab $u session add counter --agent shell -- -c "$counter"
check "the counter runs" wait_until 60 test -s "$count"
tm $u list-sessions >/dev/null # finds tmux once, for every subshell after
agent=$(pane_pid $u counter)
server=$(server_pid $u)
note "measure: lifecycle: agent pid $agent, tmux server pid $server, supervisor pid $(main_pid $u)"
lines() { wc -l <"$count"; }
grows() {
  _from=$(lines)
  wait_until 10 grown
}
grown() { [ "$(lines)" -ge $((_from + 3)) ]; }
unbroken() { awk 'NR != $1 { print "line " NR ": " $0; bad = 1; exit } END { exit bad }' "$count"; }
# the same process, still the server's child: the pane's agent (a pid is
# not reused while its process lives)
same_agent() { [ "$(cut -d' ' -f4 "/proc/$agent/stat")" = "$server" ]; }
same_server() { [ "$(server_pid $u)" = "$server" ]; }
# after WHAT: what must hold after each step
after() {
  check "after $1: the agent keeps pid $agent" same_agent
  check "after $1: the tmux server keeps pid $server" same_server
  check "after $1: the counter goes on" grows
  check "after $1: the count has no gap and no new start" unbroken
}
sup=$(main_pid $u)
new_supervisor() {
  local p
  p=$(main_pid $u)
  [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$sup" ] && systemctl is-active --quiet "$(unit $u)"
}

# phase: systemctl restart of the supervisor
check "systemctl restart of the supervisor" systemctl restart "$(unit $u)"
check "a new supervisor runs" wait_until 30 new_supervisor
note "measure: lifecycle: systemctl restart: supervisor $sup -> $(main_pid $u), agent $agent -> $(pane_pid $u counter)"
after "systemctl restart"

# phase: the supervisor is killed
sup=$(main_pid $u)
check "kill -9 of the supervisor" kill -9 "$sup"
check "systemd starts a new supervisor" wait_until 30 new_supervisor
note "measure: lifecycle: kill -9: supervisor $sup -> $(main_pid $u), agent $agent -> $(pane_pid $u counter)"
after "kill -9"

# phase: a switch to a second build and configuration
version() { sed -n 's/^  "version": "\(.*\)",$/\1/p' "$(runtime_dir $u)/state.json"; }
v0=$(version)
sup=$(main_pid $u)
check "switch to the next configuration" switch_to next
check "the supervisor was restarted" wait_until 30 new_supervisor
next_version() { [ "$(version)" = next ]; }
check "the new supervisor is the second build (state.json: next, was $v0)" wait_until 30 next_version
note "measure: lifecycle: switch: supervisor $sup -> $(main_pid $u) ($v0 -> $(version)), agent $agent -> $(pane_pid $u counter)"
after "the switch"
no_lifecycle() { ! tr '\0' '\n' <"/proc/$agent/environ" | grep -q '^LIFECYCLE='; }
check "the running agent kept its environment (no LIFECYCLE)" no_lifecycle
check "the running agent started before it (counter.env: unset)" grep -qx unset "/home/$u/counter.env"
# shellcheck disable=SC2016 # the script runs later, inside the session
check "alice adds a session after the switch" ab $u session add probe --agent shell -- -c 'echo "${LIFECYCLE-unset}" > ~/probe.env; exec sleep infinity'
check "the new session sees LIFECYCLE=new" wait_until 30 grep -qx new "/home/$u/probe.env"
argv0() { tr '\0' '\n' <"/proc/$1/cmdline" | head -n 1; }
new_table() { [ "$(argv0 "$(pane_pid $u probe)")" != "$(argv0 "$agent")" ]; }
check "the new session runs the new agents table's shell ($(argv0 "$agent") before)" new_table
restart_to_apply() {
  local ls
  ls=$(ab $u session ls 2>&1)
  echo "$ls"
  grep -Eq '^counter .*running \(restart to apply\)' <<<"$ls" && grep -Eq '^probe .*running +[0-9]' <<<"$ls"
}
check "session ls: the counter says restart to apply, the new session does not" restart_to_apply

# phase: the switch back
sup=$(main_pid $u)
check "switch back to the first configuration" switch_to base
check "the supervisor was restarted" wait_until 30 new_supervisor
first_version() { [ "$(version)" = "$v0" ]; }
check "the supervisor is the first build again ($v0)" wait_until 30 first_version
note "measure: lifecycle: switch back: supervisor $sup -> $(main_pid $u), agent $agent -> $(pane_pid $u counter)"
after "the switch back"
note "measure: lifecycle: the count reached $(lines) without a break"

# phase: the documented stop
slice=$(user_slice $u)
cgdir=/sys/fs/cgroup$(systemctl show -P ControlGroup "$slice")
bob_shell=$(pane_pid bob shell)
check "alice's slice has a cgroup ($cgdir)" test -d "$cgdir"
check "systemctl stop $slice" systemctl stop "$slice"
no_process() {
  local left
  left=$(find /proc -maxdepth 1 -name '[0-9]*' -user $u 2>/dev/null)
  [ -z "$left" ] || {
    for p in $left; do echo "$p: $(tr '\0' ' ' <"$p/cmdline")"; done
    return 1
  }
}
check "no process of alice's is left" no_process
check "no cgroup of alice's is left" test ! -e "$cgdir"
none_active() { ! systemctl is-active --quiet "$(unit $u)" && ! systemctl is-active --quiet "$(sessions_unit $u)"; }
check "no unit of alice's is active" none_active
check "bob's session ran on" kill -0 "$bob_shell"
check "starting the supervisor brings alice back" systemctl start "$(unit $u)"
check "alice's seeded session is live again" wait_until 60 has_session $u main
check "alice's counting agent is live again" wait_until 60 has_session $u counter

done_testing
