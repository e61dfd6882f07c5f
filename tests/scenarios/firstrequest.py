#!/usr/bin/env python3
"""firstrequest.py SOCKET FILE PATH: wait for FILE to appear, then send GET
PATH over the unix socket SOCKET (or, for https://HOST:PORT, through Caddy
on 127.0.0.1 with HOST as SNI and Host) every 20 ms until the answer is not 503
(the app's launcher answers 503 while it waits or the program starts);
print the milliseconds from FILE's modification to that answer, the
answer's status and FILE's modification time (seconds since the epoch). Started before FILE is written, so that its own start
(0.35 s of python3 under TCG) is not counted."""
import http.client
import os
import socket
import ssl
import sys
import time
import urllib.parse

sock, path, url = sys.argv[1:4]


class UnixConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(sock)


class CaddyConnection(http.client.HTTPConnection):
    """HTTPS to 127.0.0.1 with the origin's name as SNI and Host (Caddy's
    internal CA is not verified: the route is what counts here)."""

    def connect(self):
        o = urllib.parse.urlsplit(sock)
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection(("127.0.0.1", o.port or 443), timeout=10)
        self.sock = ctx.wrap_socket(raw, server_hostname=o.hostname)


def connection():
    if sock.startswith("https://"):
        return CaddyConnection(urllib.parse.urlsplit(sock).netloc)
    return UnixConnection("app")


deadline = time.time() + 120
while not os.path.exists(path):
    if time.time() > deadline:
        sys.exit(f"{path} did not appear")
    time.sleep(0.01)
written = os.stat(path).st_mtime
while time.time() < deadline:
    c = connection()
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
