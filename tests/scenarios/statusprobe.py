#!/usr/bin/env python3
"""Run by the attacks scenario in a session of an agent user (inside the
sessions unit): tries to state the user's attention through the auth
service's status socket, as only the user's supervisor may, by the
socket's path and through /proc/<pid>/root of each pid given (processes
of the user's other units, whose mount namespaces still show the socket).
One line per try on stdout: "TARGET: refused ERRNO" or "TARGET: answered
STATUS-LINE".

    statusprobe.py SOCKET PID... > result
"""
import errno
import socket
import sys

# a session no registry holds, in a report the service would otherwise take
BODY = b"ghost-of-statusprobe needs-you bell\n"


def attempt(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    try:
        s.connect(path)
    except OSError as e:
        return "refused " + errno.errorcode.get(e.errno, str(e.errno))
    try:
        s.sendall(
            b"PUT /attention-report HTTP/1.1\r\nHost: status\r\nConnection: close\r\n"
            + b"Content-Length: %d\r\n\r\n" % len(BODY)
            + BODY
        )
        first = s.recv(200).split(b"\r\n", 1)[0].decode("ascii", "replace")
        return "answered " + first
    except OSError as e:
        return "answered with an error " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        s.close()


def main():
    sock, pids = sys.argv[1], sys.argv[2:]
    print(f"path: {attempt(sock)}")
    for pid in pids:
        print(f"/proc/{pid}/root: {attempt(f'/proc/{pid}/root{sock}')}")
    print("done")


main()
