# shellcheck shell=bash
# Shared helpers of the scenario scripts: TAP output and ways to look at an
# agent-box instance. Scenarios run as root inside the test machine (the
# offline QEMU tier's Debian guest or a NixOS VM test) and ask systemd for
# every path: nothing here assumes /usr/bin or /nix/store.
set -uo pipefail

_tap_n=0
_tap_failed=0
_tap_out=$(mktemp)

# check DESCRIPTION COMMAND...: one TAP test; on failure prints where and
# the command's output as diagnostics.
check() {
  local desc=$1
  shift
  _tap_n=$((_tap_n + 1))
  local t0=${EPOCHREALTIME/[.,]/} rc t1
  "$@" >"$_tap_out" 2>&1
  rc=$?
  t1=${EPOCHREALTIME/[.,]/}
  if [ "$rc" -eq 0 ]; then
    echo "ok $_tap_n - $desc"
    echo "#   took $(((t1 - t0) / 1000)) ms"
  else
    _tap_failed=$((_tap_failed + 1))
    echo "not ok $_tap_n - $desc"
    echo "#   at ${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: $*"
    sed 's/^/#   /' "$_tap_out" | head -n 40
  fi
}

# note TEXT: a diagnostic line; "measure: ..." lines are printed by the
# harness.
note() { echo "# $*"; }

# done_testing: the plan (at the end: the count is known) and the END marker
# the harness requires; exit status 1 if any test failed.
done_testing() {
  echo "1..$_tap_n"
  echo "# END"
  rm -f "$_tap_out"
  [ "$_tap_failed" -eq 0 ]
}

# nap SECONDS: sleep without starting sleep(1) (0.09 s of CPU a call in the
# emulated guest, competing with what a poll waits for): a read with a
# timeout on a pipe nobody writes to (this shell holds both of its ends).
exec {_nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$_nap_fd" || true; }

# wait_until SECONDS COMMAND...: poll COMMAND until it succeeds or the
# deadline passes; then it runs once more, showing its output, and that
# run's status is the answer. The guest has one vCPU, so a poll takes it
# from what the poll waits for: between polls it waits twice what the last
# one cost, at least 0.2 s and at most 1 s, so that polling never takes
# more than a third of the CPU. (Measured 2026-12-04 in the claude guest:
# a poll that asked tmux as the user for Claude's pane and prompt line
# cost 1 s of CPU; polled every 0.2 s, it left Claude Code half the CPU it
# needed to start. A claude -p took 23 s in a session polled that way and
# 9 s unpolled.)
wait_until() {
  local deadline=$((SECONDS + $1)) t1 gap
  shift
  while :; do
    t1=${EPOCHREALTIME/[.,]/}
    "$@" >/dev/null 2>&1 && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      "$@"
      return
    fi
    gap=$(((${EPOCHREALTIME/[.,]/} - t1) / 500))
    [ "$gap" -ge 200 ] || gap=200
    [ "$gap" -le 1000 ] || gap=1000
    nap "$((gap / 1000)).$(printf '%03d' $((gap % 1000)))"
  done
}

# wait_active SECONDS UNIT: wait_until the unit is active; if it does not
# become active, print its status and the jobs systemd still runs (the
# failed check's diagnostics).
wait_active() {
  wait_until "$1" systemctl is-active --quiet "$2" && return
  systemctl status --no-pager --lines=20 "$2"
  systemctl list-jobs --no-pager | head -n 12
  return 1
}

# now_ms: milliseconds since the epoch, from bash itself (starting date(1)
# took 0.1 s in the emulated guest, and every check calls this twice).
now_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  echo "${t%???}"
}

unit() { echo "agent-box@$1.service"; }
main_pid() { systemctl show -P MainPID "$(unit "$1")"; }
# The unit of the user's tmux server and agents, its main process (tmux),
# and the user's slice (systemd-escape's name for it: an independent check
# of the module's escaping).
sessions_unit() { echo "agent-box-sessions@$1.service"; }
server_pid() { systemctl show -P MainPID "$(sessions_unit "$1")"; }
user_slice() { echo "agent-box-$(systemd-escape "$1").slice"; }

# The program paths the unit's drop-in names (ExecStart and the
# environment of the running supervisor).
agent_box_bin() {
  systemctl show -P ExecStart "$(unit "$1")" | sed -n 's/.*path=\([^ ;]*\).*/\1/p'
}
# proc_env PID NAME: one variable of a process's environment.
proc_env() {
  tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"
}
_runtime_root=/run/agent-box
runtime_dir() { echo "$_runtime_root/$1"; }
# The tmux the user's server runs (its clients must run the same program);
# nothing while the sessions unit's main process is still `agent-box
# tmux-server`, the moment before it becomes tmux.
tmux_bin() {
  local p
  p=$(readlink "/proc/$(server_pid "$1")/exe") && [ "${p##*/}" = tmux ] && echo "$p"
}

# switch_to next|base: apply the lifecycle scenario's second configuration
# (a second build of agent-box; for alice a changed agents table and the
# variable LIFECYCLE=new) or the first one again, as `nixos-rebuild switch`
# does. In a NixOS VM test that is switch-to-configuration itself (the
# node's specialisation "next"); in the offline tier's Debian guest,
# lifecycle.sh's offline_switch applies switch-to-configuration's rules to
# the installed drop-ins.
switch_to() {
  if [ -d /run/booted-system/specialisation ]; then
    if [ "$1" = base ]; then
      /run/booted-system/bin/switch-to-configuration test
    else
      "/run/booted-system/specialisation/$1/bin/switch-to-configuration" test
    fi
    return
  fi
  offline_switch "$1"
}

# as USER COMMAND...: run as the user, as from an SSH login (outside the
# unit), with the user's HOME: the user's uid, primary group and groups.
# setpriv, not runuser: runuser's PAM stack took 0.6 to 1.1 s a call in the
# emulated guest, setpriv 0.09 s, and polls call this every 0.2 s.
declare -A _as_gid=()
as() {
  local u=$1
  shift
  [ -n "${_as_gid[$u]:-}" ] || _as_gid[$u]=$(id -g "$u") || return
  HOME="/home/$u" USER="$u" LOGNAME="$u" setpriv --reuid="$u" --regid="${_as_gid[$u]}" --init-groups -- "$@"
}

# ab and tm look their program up once per user and shell: its path comes
# from the unit's drop-in and does not change while a phase runs, and the
# lookup (systemctl and text tools) took about 0.35 s in the emulated guest.
# A lookup that finds nothing (the supervisor is not running) is not kept.
declare -A _ab_bin=() _tmux_bin=()

# ab USER ARGS...: the user's agent-box CLI.
ab() {
  local u=$1
  shift
  [ -n "${_ab_bin[$u]:-}" ] || _ab_bin[$u]=$(agent_box_bin "$u")
  if [ -z "${_ab_bin[$u]}" ]; then
    echo "no agent-box program in $(unit "$u")'s ExecStart" >&2
    return 1
  fi
  as "$u" "${_ab_bin[$u]}" "$@"
}

# tm USER ARGS...: tmux on the user's socket, as the user.
tm() {
  local u=$1
  shift
  _tmux_of "$u" || return
  as "$u" "${_tmux_bin[$u]}" -S "$_runtime_root/$u/tmux.sock" "$@"
}
# tmq USER ARGS...: tmux on the user's socket as root, for what a check
# only reads (which sessions exist, a pane's process, what it shows): as
# the user (setpriv, then tmux) a call cost 0.2 to 0.5 s of the guest's CPU,
# as root 0.1 s, and polls make many. tmux lets root and the server's
# owner in.
tmq() {
  local u=$1
  shift
  _tmux_of "$u" || return
  "${_tmux_bin[$u]}" -S "$_runtime_root/$u/tmux.sock" "$@"
}
_tmux_of() {
  [ -n "${_tmux_bin[$1]:-}" ] || _tmux_bin[$1]=$(tmux_bin "$1")
  [ -n "${_tmux_bin[$1]}" ] && return
  echo "no program of $(sessions_unit "$1")'s main process (the tmux server)" >&2
  return 1
}

has_session() { tmq "$1" has-session -t "=$2"; }
pane_pid() { tmq "$1" display-message -p -t "=$2:" '#{pane_pid}' 2>/dev/null; }
pane_alive() {
  local pid
  pid=$(pane_pid "$1" "$2")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$pid" != "${3:-}" ]
}

# in_unit USER COMMAND...: run inside the sessions unit's mount namespace
# as the user (what the agents' view of the file system is).
in_unit() {
  local u=$1
  shift
  nsenter -t "$(server_pid "$u")" -m -S "$(id -u "$u")" -G "$(id -g "$u")" -- env HOME="/home/$u" USER="$u" "$@"
}

# run_session USER NAME SCRIPT: add a shell session that runs SCRIPT with
# bash inside the hardened unit (seccomp, namespaces, cgroup and all), and
# wait until it has exited 0 and been parked.
run_session() {
  local u=$1 name=$2 script=$3
  ab "$u" session add "$name" --agent shell -- -c "$script" &&
    wait_until 120 session_stopped "$u" "$name"
}
# session_state USER NAME: running, stopped, dead, absent, unknown, or
# "missing" when the registry has no such session. From session ls's
# table (NAME AGENT STATE ...; session names hold no blank), not its JSON:
# python3 would double what a poll of it costs here.
session_state() {
  local table
  table=$(ab "$1" session ls 2>/dev/null) || return
  awk -v n="$2" 'NR > 1 && $1 == n { print $3; f = 1 } END { if (!f) print "missing" }' <<<"$table"
}
session_is() { [ "$(session_state "$1" "$2")" = "$3" ]; }
session_stopped() { session_is "$1" "$2" stopped; }
