#!/usr/bin/env python3
"""Run as an app's program (the apps scenario puts it in the app's place):
tries, from inside the app, what an app must not be able to do to its
user's agents, and writes one line per attempt to
$STATE_DIRECTORY/probe.txt ("NAME: refused (why)" or "NAME: POSSIBLE
(what)"), then "done". The host pids of the user's tmux server and of an
agent come from targets.txt in the app's directory (the scenario writes
it)."""
import ctypes
import errno
import os
import socket
import sys

out = []


def attempt(name, fn):
    try:
        what = fn()
        out.append(f"{name}: POSSIBLE ({what})")
    except OSError as e:
        out.append(f"{name}: refused ({errno.errorcode.get(e.errno, e.errno)})")


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return "connected to " + path
    finally:
        s.close()


def read(path):
    with open(path, "rb") as f:
        return f"read {len(f.read())} bytes of {path}"


def write(path):
    with open(path, "wb") as f:
        f.write(b"x")
    os.unlink(path)
    return "wrote " + path


libc = ctypes.CDLL(None, use_errno=True)


def ptrace(pid):
    PTRACE_SEIZE = 0x4206
    if libc.ptrace(PTRACE_SEIZE, pid, None, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return f"seized pid {pid}"


def signal0(pid):
    os.kill(pid, 0)
    return f"pid {pid} can be signalled"


targets = {}
with open("targets.txt") as f:
    for line in f:
        k, _, v = line.strip().partition("=")
        targets[k] = int(v)
user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
env_file = f"/home/{user}/.config/agent-box/env"
runtime = f"/run/agent-box/{user}"

attempt("connect to the tmux socket", lambda: connect(f"{runtime}/tmux.sock"))
attempt("list the user's runtime directory", lambda: str(os.listdir(runtime)))
attempt("read the env file", lambda: read(env_file))
for name, pid in sorted(targets.items()):
    attempt(f"read the env file through /proc/{name}/root", lambda: read(f"/proc/{pid}/root{env_file}"))
    attempt(f"read /proc/{name}/environ", lambda: read(f"/proc/{pid}/environ"))
    attempt(f"ptrace {name}", lambda: ptrace(pid))
    attempt(f"signal {name}", lambda: signal0(pid))
attempt("write the home", lambda: write(f"/home/{user}/probe"))
attempt("write the app's directory", lambda: write(os.path.join(os.getcwd(), "probe")))
attempt("connect to the system bus", lambda: connect("/run/dbus/system_bus_socket"))
procs = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
cmds = []
for p in procs:
    try:
        with open(f"/proc/{p}/cmdline", "rb") as f:
            cmds.append(f"{p}:" + f.read().split(b"\0")[0].decode(errors="replace").rsplit("/", 1)[-1])
    except OSError:
        pass
out.append("processes: " + " ".join(cmds))
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith(("CapEff:", "NoNewPrivs:", "Uid:")):
            out.append(line.strip().replace("\t", " "))
try:
    write(os.path.join(os.environ["STATE_DIRECTORY"], "probe-write"))
    out.append("state directory: writable")
except OSError as e:
    out.append(f"state directory: not writable ({e})")
out.append("done")
# Whole or not at all: the launcher runs the probe again after it exits,
# while the scenario reads the last report.
report = os.path.join(os.environ["STATE_DIRECTORY"], "probe.txt")
with open(report + ".tmp", "w") as f:
    f.write("\n".join(out) + "\n")
os.replace(report + ".tmp", report)
sys.exit(0)
