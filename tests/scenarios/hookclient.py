#!/usr/bin/env python3
"""A webhook sender for the scenario scripts, signing like GitHub.

Standard library only. It POSTs over HTTPS to 127.0.0.1 with the box
origin's name as SNI and Host (Caddy's internal CA is not verified: the
scenarios check the route, not the PKI), with X-Hub-Signature-256 =
sha256=HMAC-SHA256(secret, body).

Usage:
  hookclient.py send URL SECRETFILE BODY [-H 'Name: value']... [--no-sig]
      one delivery; prints "status NNN" then the answer's body
  hookclient.py burst URL SECRETFILE COUNT
      COUNT distinct deliveries at once (one thread each); prints
      "status NNN count" lines, "ids N" (distinct ids answered 202) and
      "latency p50 P p99 Q max M" in milliseconds
  hookclient.py flood URL SECRETFILE SECONDS COUNTFILE
      distinct deliveries one after another for SECONDS; after each 202 it
      prints "# acked: ID" on stdout (flushed) and writes the number of
      acknowledged deliveries to COUNTFILE
  hookclient.py slow URL SECRETFILE COUNT
      COUNT requests at once that never finish their body: each announces
      100 bytes and sends one every 0.5 s (what a client that knows a hook's
      URL can do); prints "slow COUNT started" once all are connected and
      sending, then, as each ends, "slow answer NNN after S s"
SECRETFILE holds the secret (one trailing newline is ignored).
AGENT_BOX_WEB_ADDR is the address to connect to (default 127.0.0.1),
AGENT_BOX_WEB_SOURCE the local address to connect from.
"""

import hashlib
import hmac
import http.client
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse

CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE
CTX.set_alpn_protocols(["http/1.1"])


class Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, with the origin's name as SNI and Host."""

    def connect(self):
        self.sock = connect(self.host, self.port)


def connect(host, port):
    addr = os.environ.get("AGENT_BOX_WEB_ADDR", "127.0.0.1")
    source = os.environ.get("AGENT_BOX_WEB_SOURCE")
    raw = socket.create_connection((addr, port), timeout=30, source_address=(source, 0) if source else None)
    return CTX.wrap_socket(raw, server_hostname=host)


def secret_of(path):
    with open(path, "rb") as f:
        s = f.read()
    return s[:-1] if s.endswith(b"\n") else s


def post(url, secret, body, headers=None, sign=True):
    u = urllib.parse.urlsplit(url)
    c = Conn(u.hostname, u.port or 443, timeout=30)
    h = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/agent-box-test"}
    if sign:
        h["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    h.update(headers or {})
    try:
        c.request("POST", u.path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        c.close()


def acked_id(status, data):
    if status != 202:
        return None
    try:
        return json.loads(data)["id"]
    except (ValueError, KeyError):
        return None


def cmd_send(url, secret_file, body, opts):
    headers, sign = {}, True
    i = 0
    while i < len(opts):
        if opts[i] == "-H":
            k, v = opts[i + 1].split(":", 1)
            headers[k.strip()] = v.strip()
            i += 2
        elif opts[i] == "--no-sig":
            sign = False
            i += 1
        else:
            raise SystemExit(f"hookclient: unknown option {opts[i]}")
    status, data = post(url, secret_of(secret_file), body.encode(), headers, sign)
    print(f"status {status}")
    print(data, end="" if data.endswith("\n") else "\n")


def cmd_burst(url, secret_file, count):
    secret = secret_of(secret_file)
    stamp = time.time_ns()
    results = [None] * count
    start = threading.Barrier(count)

    def one(i):
        body = json.dumps({"burst": stamp, "n": i}, separators=(",", ":")).encode()
        start.wait()
        t0 = time.monotonic()
        try:
            status, data = post(url, secret, body)
        except OSError as e:
            status, data = f"error {e.__class__.__name__}", ""
        results[i] = (status, acked_id(status, data), (time.monotonic() - t0) * 1000)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {}
    for status, _, _ in results:
        counts[status] = counts.get(status, 0) + 1
    for status, n in sorted(counts.items(), key=str):
        print(f"status {status} {n}")
    ids = {i for _, i, _ in results if i}
    print(f"ids {len(ids)}")
    for i in sorted(ids):
        print(f"id {i}")
    lat = sorted(ms for _, _, ms in results)
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"latency p50 {p(0.5):.1f} p99 {p(0.99):.1f} max {lat[-1]:.1f}")


def cmd_flood(url, secret_file, seconds, count_file):
    secret = secret_of(secret_file)
    stamp = time.time_ns()
    end = time.monotonic() + seconds
    n = acked = 0
    while time.monotonic() < end:
        n += 1
        body = json.dumps({"flood": stamp, "n": n}, separators=(",", ":")).encode()
        try:
            status, data = post(url, secret, body)
        except OSError:
            continue
        i = acked_id(status, data)
        if i:
            acked += 1
            print(f"# acked: {i}", flush=True)
            with open(count_file + ".tmp", "w") as f:
                f.write(f"{acked}\n")
            os.replace(count_file + ".tmp", count_file)


def cmd_slow(url, count):
    u = urllib.parse.urlsplit(url)
    socks = []
    for _ in range(count):
        s = connect(u.hostname, u.port or 443)
        s.sendall(
            (
                f"POST {u.path} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Type: application/json\r\n"
                "X-Hub-Signature-256: sha256=" + "0" * 64 + "\r\nContent-Length: 100\r\n\r\n{"
            ).encode()
        )
        socks.append(s)
    print(f"slow {count} started", flush=True)
    start = time.monotonic()
    open_ = list(socks)
    while open_:
        time.sleep(0.5)
        for s in list(open_):
            try:
                s.setblocking(False)
                try:
                    head = s.recv(200)
                except (BlockingIOError, ssl.SSLWantReadError):
                    head = None
                s.setblocking(True)
                if head is not None:
                    line = head.split(b"\r\n", 1)[0].decode(errors="replace")
                    print(f"slow answer {line.split(' ')[1] if ' ' in line else '-'} after {time.monotonic() - start:.1f} s", flush=True)
                    open_.remove(s)
                    s.close()
                    continue
                s.sendall(b" ")
            except OSError as e:
                print(f"slow answer closed ({e.__class__.__name__}) after {time.monotonic() - start:.1f} s", flush=True)
                open_.remove(s)


def main(argv):
    if len(argv) < 5:
        raise SystemExit(__doc__)
    cmd, url, secret_file = argv[1], argv[2], argv[3]
    if cmd == "send":
        cmd_send(url, secret_file, argv[4], argv[5:])
    elif cmd == "burst":
        cmd_burst(url, secret_file, int(argv[4]))
    elif cmd == "slow" and len(argv) == 5:
        cmd_slow(url, int(argv[4]))
    elif cmd == "flood" and len(argv) == 6:
        cmd_flood(url, secret_file, float(argv[4]), argv[5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
