#!/usr/bin/env python3
"""firstrequest.py SOCKET FILE PATH: wait for FILE to appear, then send GET
PATH over the unix socket SOCKET every 20 ms until the answer is not 503
(the app's launcher answers 503 while it waits or the program starts);
print the milliseconds from FILE's modification to that answer, the
answer's status and FILE's modification time (seconds since the epoch). Started before FILE is written, so that its own start
(0.35 s of python3 under TCG) is not counted."""
import http.client
import os
import socket
import sys
import time

sock, path, url = sys.argv[1:4]


class UnixConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(sock)


deadline = time.time() + 120
while not os.path.exists(path):
    if time.time() > deadline:
        sys.exit(f"{path} did not appear")
    time.sleep(0.01)
written = os.stat(path).st_mtime
while time.time() < deadline:
    c = UnixConnection("app")
    try:
        c.request("GET", url)
        status = c.getresponse().status
    except OSError:
        status = None
    finally:
        c.close()
    if status is not None and status != 503:
        print(f"{round((time.time() - written) * 1000)} {status} {written:.6f}")
        sys.exit(0)
    time.sleep(0.02)
sys.exit("no answer but 503 within 120 s")
