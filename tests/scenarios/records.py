#!/usr/bin/env python3
"""A small record store, the program alice's agent writes in the apps
scenario (standard library only): PUT /records/ID stores the body durably
(written, fsynced, renamed, its directory fsynced, and only then
acknowledged with 201); GET /records/ID returns it byte for byte; GET
/headers shows the Cookie and Authorization headers it got. It serves
on 127.0.0.1:$PORT and keeps its records in $STATE_DIRECTORY/records."""
import http.server
import os
import re

ID = re.compile(r"/records/([A-Za-z0-9_-]{1,64})")
STORE = os.path.join(os.environ["STATE_DIRECTORY"], "records")
os.makedirs(STORE, exist_ok=True)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, code, body=b"", ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        m = ID.fullmatch(self.path)
        n = int(self.headers.get("Content-Length", "-1"))
        if not m or n < 0 or n > 1 << 20:
            return self.reply(400, b"PUT /records/ID with a body of at most 1 MiB\n")
        body = self.rfile.read(n)
        path = os.path.join(STORE, m.group(1))
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        d = os.open(STORE, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(d)
        finally:
            os.close(d)
        self.reply(201, b"stored\n")

    def do_GET(self):
        if self.path == "/headers":  # what reached the app of the browser's credentials
            seen = f"cookie: {self.headers.get('Cookie', '')}\nauthorization: {self.headers.get('Authorization', '')}\n"
            return self.reply(200, seen.encode())
        m = ID.fullmatch(self.path)
        if not m:
            return self.reply(404, b"no such record\n")
        try:
            with open(os.path.join(STORE, m.group(1)), "rb") as f:
                body = f.read()
        except FileNotFoundError:
            return self.reply(404, b"no such record\n")
        self.reply(200, body, "application/octet-stream")

    def log_message(self, fmt, *args):
        print("records: " + fmt % args, flush=True)


http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
