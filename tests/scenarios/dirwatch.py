#!/usr/bin/env python3
"""Records what happens to the names in one directory (inotify, no
packages needed), one line per event until SECONDS have passed:

  dirwatch.py DIR OUT SECONDS
  dirwatch.py --locked-writes OUT FILE

Each line of OUT: "EVENT[,ISDIR] NAME" with EVENT one of CREATE, DELETE,
MOVED_FROM, MOVED_TO; its first line says it watches. The claude scenario
pins Claude Code's lock protocol on ~/.claude.json with it: --locked-writes
prints how many times FILE was replaced by a rename of FILE.tmp.* while the
directory FILE.lock existed, and how many times otherwise, and exits 1 if
never under the lock.
"""
import ctypes
import os
import select
import struct
import sys
import time

IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO, IN_ISDIR = 0x100, 0x200, 0x40, 0x80, 0x40000000
NAMES = {IN_CREATE: "CREATE", IN_DELETE: "DELETE", IN_MOVED_FROM: "MOVED_FROM", IN_MOVED_TO: "MOVED_TO"}


def locked_writes(out, name):
    held, renamed, writes, unlocked = False, "", 0, 0
    with open(out, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                continue
            kind, _, what = line.rstrip("\n").partition(" ")
            if what == name + ".lock" and kind == "CREATE,ISDIR":
                held = True
            elif what == name + ".lock" and kind == "DELETE,ISDIR":
                held = False
            elif kind == "MOVED_FROM":
                renamed = what
            elif kind == "MOVED_TO" and what == name:
                if held and renamed.startswith(name + ".tmp."):
                    writes += 1
                else:
                    unlocked += 1
    print(f"{writes} locked writes, {unlocked} others")
    return 0 if writes > 0 else 1


def main():
    if sys.argv[1] == "--locked-writes":
        sys.exit(locked_writes(sys.argv[2], sys.argv[3]))
    directory, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        sys.exit("inotify_init1: errno %d" % ctypes.get_errno())
    mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
    if libc.inotify_add_watch(fd, directory.encode(), mask) < 0:
        sys.exit("inotify_add_watch: errno %d" % ctypes.get_errno())
    end = time.monotonic() + seconds
    with open(out, "w", encoding="utf-8") as f:
        f.write("# watching\n")
        f.flush()
        while (left := end - time.monotonic()) > 0:
            if not select.select([fd], [], [], left)[0]:
                continue
            data = os.read(fd, 65536)
            i = 0
            while i < len(data):
                _, ev, _, length = struct.unpack_from("iIII", data, i)
                name = data[i + 16:i + 16 + length].rstrip(b"\0").decode(errors="replace")
                i += 16 + length
                kind = NAMES.get(ev & ~IN_ISDIR, hex(ev))
                f.write(kind + (",ISDIR" if ev & IN_ISDIR else "") + " " + name + "\n")
            f.flush()


if __name__ == "__main__":
    main()
