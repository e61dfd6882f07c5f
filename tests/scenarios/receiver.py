#!/usr/bin/env python3
"""An HTTP endpoint that records what is POSTed to it: the notify
service's receiver in the web scenario (in a network namespace of its own).

Usage: receiver.py ADDR PORT OUT
Each request becomes one JSON line in OUT: its time (ms, this machine's
clock), method, path, the headers Content-Type, Title, Click and Actions, and its
body. OUT.ready appears once it listens. Every request gets 200.
"""

import http.server
import json
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode(errors="replace")
        rec = {
            "ms": int(time.time() * 1000),
            "method": self.command,
            "path": self.path,
            "headers": {k: self.headers.get(k) for k in ("Content-Type", "Title", "Click", "Actions")},
            "body": body,
        }
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main(argv):
    global OUT
    if len(argv) != 4:
        raise SystemExit(__doc__)
    addr, port, OUT = argv[1], int(argv[2]), argv[3]
    srv = http.server.ThreadingHTTPServer((addr, port), Handler)
    open(OUT + ".ready", "w").close()
    srv.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
