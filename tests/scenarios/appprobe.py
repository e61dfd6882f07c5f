#!/usr/bin/env python3
"""Run as an app's program (the apps scenario puts it in the app's place):
tries, from inside the app, what an app must not be able to do to its
user's agents, and writes one line per attempt to
$STATE_DIRECTORY/probe.txt ("NAME: refused (why)" or "NAME: POSSIBLE
(what)"), then "done". The host pids of the user's tmux server and of an
agent come from targets.txt in the app's directory, and reach.txt there
lists what the user reaches on the host (the scenario writes both, reach.txt
with `appprobe.py --reachable`, run as the user outside the app):
"socket PATH" (a socket the user can connect to), "dir PATH" (a directory
of the user's), "shared PATH" (a directory anyone may write). From inside
the app each socket must refuse the connect, each directory the listing
and a new file, and a file written into a shared directory must not be the
host's (the scenario looks for TOKEN's name on the host afterwards).

    appprobe.py --reachable TOKEN < CANDIDATES > reach.txt
"""
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
    """Connects to the unix socket path as a stream, or, for a datagram
    socket (EPROTOTYPE), as a datagram socket."""
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_UNIX, kind)
        try:
            s.connect(path)
            return "connected to " + path
        except OSError as e:
            if e.errno != errno.EPROTOTYPE:
                raise
        finally:
            s.close()
    raise OSError(errno.EPROTOTYPE, "neither stream nor datagram")


def reachable():
    """--reachable: of the candidates on stdin ("socket PATH", "dir PATH",
    "shared PATH"), prints those this process reaches: a socket it can
    connect to, a directory it can list, a shared directory it can write."""
    for line in sys.stdin:
        kind, _, path = line.rstrip("\n").partition(" ")
        try:
            if kind == "socket":
                connect(path)
            elif kind == "dir":
                os.listdir(path)
            elif kind == "shared":
                if not os.access(path, os.W_OK | os.X_OK):
                    continue
            else:
                continue
        except OSError:
            continue
        print(kind, path)


if len(sys.argv) > 1 and sys.argv[1] == "--reachable":
    reachable()
    sys.exit(0)


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
attempt("connect to the supervisor's approval socket", lambda: connect(f"{runtime}/approval.sock"))
attempt("read the env file", lambda: read(env_file))
for name, pid in sorted(targets.items()):
    attempt(f"read the env file through /proc/{name}/root", lambda: read(f"/proc/{pid}/root{env_file}"))
    attempt(f"read /proc/{name}/environ", lambda: read(f"/proc/{pid}/environ"))
    attempt(f"ptrace {name}", lambda: ptrace(pid))
    attempt(f"signal {name}", lambda: signal0(pid))
attempt("write the home", lambda: write(f"/home/{user}/probe"))
attempt("write the app's directory", lambda: write(os.path.join(os.getcwd(), "probe")))
attempt("connect to the system bus", lambda: connect("/run/dbus/system_bus_socket"))
with open("reach.txt") as f:
    reach = [line.rstrip("\n").partition(" ")[::2] for line in f if line.strip()]
with open("token.txt") as f:
    token = f.read().strip()
for kind, path in reach:
    if kind == "socket":
        attempt(f"reach socket {path}", lambda: connect(path))
    elif kind == "dir":
        attempt(f"reach dir {path}", lambda: str(os.listdir(path)))
        attempt(f"reach dir {path} (a new file)", lambda: write(os.path.join(path, token)))
    elif kind == "shared":
        # a file here must be the app's alone: the scenario looks for it on
        # the host after the probe
        try:
            with open(os.path.join(path, token), "wb") as f:
                f.write(b"x")
            out.append(f"shared {path}: wrote {token} (the host must not have it)")
        except OSError as e:
            out.append(f"shared {path}: refused ({errno.errorcode.get(e.errno, e.errno)})")
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
