#!/usr/bin/env python3
"""A browser-like client of the web surface, for the scenario scripts.

Standard library only (it runs unchanged in the Debian guest and in NixOS
VM tests). It talks HTTPS to 127.0.0.1 with the origin's name as SNI and
Host (so no DNS is needed for *.localhost), keeps cookies per origin like a
browser (host-only), sends the Sec-Fetch-* headers a browser sends, and
speaks just enough WebSocket (RFC 6455) and ttyd protocol to type into a
terminal. Caddy's internal CA is not verified: the scenarios check the
routes, not the PKI.

Usage (every command prints what it saw; exit 0 unless the tool failed):
  webclient.py login JAR LOGIN PASSWORD [USER]   log in on the box origin (and open USER)
  webclient.py open JAR USER                     open USER from the box session (no password)
  webclient.py get JAR URL [-H 'Name: value']... [--fetch] [--post k=v&...]
                 [--field k=v]... [--upload FILE NAME]...   POST a multipart form (fields, then files)
  webclient.py term JAR URL ORIGIN INPUT EXPECT  WebSocket to a terminal: type INPUT, wait for EXPECT
  webclient.py hold JAR URL ORIGIN SECONDS       open a terminal WebSocket; report when it closes
  webclient.py echo JAR URL ORIGIN COUNT         time COUNT keystrokes' echo (p50/p90/max)
  webclient.py inbox JAR URL SECONDS             read the box's inbox event stream: each event as "event
                                                 MS NAME users=U,... items=N" (MS: the guest's clock, ms)
                                                 and its data lines as "data ...", flushed as they come;
                                                 then "ended after S s" or "open after SECONDS s"
  webclient.py mint JAR USER                     ask the box for USER's hand-over link; do not follow it
  webclient.py visit JAR URL                     follow a hand-over link as a browser (its page, its form)
  webclient.py app JAR LOGIN PASSWORD URL        open URL of an app behind the login as a browser: its
                                                 origin sends it to the box's login form, filled in; the
                                                 hand-over brings it back to URL
  webclient.py bench JAR URL N                   N GETs of URL on one kept-alive connection (http: plain,
                                                 any address; https: as everywhere here), "p50 MS p99 MS"
  webclient.py flood SECONDS PERIOD OUT ADDR...  from each ADDR (a local address, one kept-alive
                                                 connection) a login of an unknown name (or of
                                                 AGENT_BOX_FLOOD_LOGIN, wrong) every PERIOD s
                                                 (or when the last is answered, if later) for SECONDS
                                                 (PERIOD 0: one each, all at once) or until the file
                                                 OUT.stop exists; "STATUS MS" per answer in OUT
  webclient.py serve DIR                         answer the requests of weblib.sh's client() through
                                                 the FIFOs DIR/req and DIR/resp, one at a time, each
                                                 in a fork of this process (no import at each call)
JAR is a JSON file of cookies by origin host (created if missing), plus
"domain:D path:P" entries for cookies set with a Domain attribute (sent to
D and its subdomains, under path P). URL is https://host:port/path. `get`
prints "status NNN", the headers as "header Name: value" and the body after
a blank line.

Environment: AGENT_BOX_WEB_ADDR is the address to connect to (default
127.0.0.1; an IPv6 address works), AGENT_BOX_WEB_SOURCE the local address to
connect from, and AGENT_BOX_EXTRA_COOKIES=N:SIZE adds N foreign cookies of
SIZE bytes each (name and value) to every request, as a browser sends the
cookies other origins of the same site set.
"""

import base64
import http.client
import json
import os
import socket
import ssl
import struct
import sys
import time
import urllib.parse

CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE
CTX.set_alpn_protocols(["http/1.1"])


def load_jar(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def save_jar(path, jar):
    with open(path + ".tmp", "w") as f:
        json.dump(jar, f)
    os.replace(path + ".tmp", path)


def connect(host, port, source=None):
    addr = os.environ.get("AGENT_BOX_WEB_ADDR", "127.0.0.1")
    source = source or os.environ.get("AGENT_BOX_WEB_SOURCE")
    raw = socket.create_connection((addr, port), timeout=20, source_address=(source, 0) if source else None)
    return CTX.wrap_socket(raw, server_hostname=host)


class Conn(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1, with the origin's name as SNI and Host."""

    def connect(self):
        self.sock = connect(self.host, self.port)


def extra_cookies():
    spec = os.environ.get("AGENT_BOX_EXTRA_COOKIES")
    if not spec:
        return []
    n, _, size = spec.partition(":")
    out = []
    for i in range(int(n)):
        name = f"foreign{i:03d}"
        out.append(f"{name}={'x' * (int(size) - len(name))}")
    return out


def cookie_header(jar, host, path="/"):
    pairs = [f"{k}={v}" for k, v in sorted(jar.get(host, {}).items())]
    for key, cookies in sorted(jar.items()):
        if not key.startswith("domain:"):
            continue
        d, _, p = key[len("domain:") :].partition(" path:")
        if (host == d or host.endswith("." + d)) and (path == p or path.startswith(p.rstrip("/") + "/")):
            pairs += [f"{k}={v}" for k, v in sorted(cookies.items())]
    return "; ".join(extra_cookies() + pairs)


def store_cookies(jar, host, headers):
    for k, v in headers:
        if k.lower() != "set-cookie":
            continue
        nv, _, rest = v.partition(";")
        name, _, value = nv.partition("=")
        attrs = {}
        for a in rest.split(";"):
            ak, _, av = a.strip().partition("=")
            attrs[ak.lower()] = av
        key = host
        if attrs.get("domain"):
            key = f"domain:{attrs['domain'].lstrip('.').lower()} path:{attrs.get('path') or '/'}"
        if attrs.get("max-age") in ("0", "-1") or value == "":
            jar.get(key, {}).pop(name.strip(), None)
        else:
            jar.setdefault(key, {})[name.strip()] = value.strip()


def request(jar, method, url, headers=None, body=None, navigate=True, origin=None):
    u = urllib.parse.urlsplit(url)
    host, port = u.hostname, u.port or 443
    h = {
        "Host": u.netloc,
        "User-Agent": "agent-box-scenario",
        "Sec-Fetch-Site": "same-origin" if method == "POST" else "none",
        "Sec-Fetch-Mode": "navigate" if navigate else "cors",
        "Sec-Fetch-Dest": "document" if navigate else "empty",
    }
    c = cookie_header(jar, host, u.path or "/")
    if c:
        h["Cookie"] = c
    if method == "POST":
        h["Origin"] = origin or f"https://{u.netloc}"
        h["Content-Type"] = "application/x-www-form-urlencoded"
    for k, v in (headers or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    # A login hashes 600,000 PBKDF2 rounds: seconds in an emulated guest.
    conn = Conn(host, port, timeout=120)
    path = u.path or "/"
    if u.query:
        path += "?" + u.query
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    store_cookies(jar, host, r.getheaders())
    conn.close()
    return r.status, r.getheaders(), data


def header(headers, name):
    for k, v in headers:
        if k.lower() == name.lower():
            return v
    return None


def follow(jar, method, url, body=None, limit=10):
    """A browser navigation: POST (or GET), then GET along 30x redirects."""
    status, headers, data = request(jar, method, url, body=body)
    for _ in range(limit):
        if status not in (301, 302, 303, 307, 308):
            return url, status, headers, data
        url = urllib.parse.urljoin(url, header(headers, "Location"))
        status, headers, data = request(jar, "GET", url)
    raise SystemExit("too many redirects")


def form_fields(page, action):
    """The hidden inputs of the form posting to action (the hand-over page)."""
    import html.parser

    class P(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.inform = False
            self.fields = {}

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            if tag == "form" and a.get("action") == action:
                self.inform = True
            elif tag == "input" and self.inform and a.get("name"):
                self.fields[a["name"]] = a.get("value", "")

        def handle_endtag(self, tag):
            if tag == "form":
                self.inform = False

    p = P()
    p.feed(page)
    return p.fields


def hand_over(jar, url, status, data):
    """From the box's answer (the hand-over page) to the user origin."""
    fields = form_fields(data.decode(errors="replace"), "/auth/handover")
    if "code" not in fields:
        print(f"status {status}\nno hand-over form at {url}")
        return None
    return follow(jar, "POST", urllib.parse.urljoin(url, "/auth/handover"), body=urllib.parse.urlencode(fields))


def cmd_login(jar_path, login, password, user=None):
    jar = load_jar(jar_path)
    box = os.environ.get("AGENT_BOX_WEB_DOMAIN", "box.localhost:8443")
    body = urllib.parse.urlencode({"login": login, "password": password, "user": user or "", "next": "/"})
    url, status, headers, data = follow(jar, "POST", f"https://{box}/auth/login", body=body)
    if user:
        r = hand_over(jar, url, status, data)
        save_jar(jar_path, jar)
        if r is None:
            return
        url, status, headers, data = r
    save_jar(jar_path, jar)
    print(f"status {status}\nurl {url}")


def mint(jar, user):
    """The box's "Open" button, not followed: its status and Location (the
    hand-over link)."""
    box = os.environ.get("AGENT_BOX_WEB_DOMAIN", "box.localhost:8443")
    body = urllib.parse.urlencode({"user": user, "next": "/"})
    status, headers, _ = request(jar, "POST", f"https://{box}/auth/open", body=body)
    return status, header(headers, "Location") or ""


def visit(jar, url):
    """A browser following a link to a hand-over page: along its redirects
    (a user origin binds a pending code through the box's /auth/bind), the
    page, then its form (what its script submits)."""
    url, status, headers, data = follow(jar, "GET", url)
    return hand_over(jar, url, status, data)


def cmd_open(jar_path, user):
    """The box's "Open" button: no password, the box session's cookie."""
    jar = load_jar(jar_path)
    status, link = mint(jar, user)
    r = visit(jar, link) if status == 303 else print(f"status {status}\nno hand-over link")
    save_jar(jar_path, jar)
    if r is not None:
        print(f"status {r[1]}\nurl {r[0]}")


def cmd_mint(jar_path, user):
    """The hand-over link, not followed (which a login could send to someone)."""
    jar = load_jar(jar_path)
    status, link = mint(jar, user)
    save_jar(jar_path, jar)
    print(f"status {status}\nlink {link}")


def cmd_visit(jar_path, url):
    jar = load_jar(jar_path)
    r = visit(jar, url)
    save_jar(jar_path, jar)
    if r is not None:
        url, status, _, data = r
        print(f"status {status}\nurl {url}")
        sys.stdout.write(data.decode(errors="replace"))


def cmd_app(jar_path, login, password, url):
    jar = load_jar(jar_path)
    page, status, _, data = follow(jar, "GET", url)
    fields = form_fields(data.decode(errors="replace"), "/auth/login")
    if status != 200 or "bind" not in fields:
        save_jar(jar_path, jar)
        print(f"status {status}\nno login form with the app's binding at {page}")
        return
    fields.update(login=login, password=password)
    at, status, _, data = follow(jar, "POST", urllib.parse.urljoin(page, "/auth/login"), body=urllib.parse.urlencode(fields))
    r = hand_over(jar, at, status, data)
    save_jar(jar_path, jar)
    if r is not None:
        url, status, _, data = r
        print(f"status {status}\nurl {url}\n")
        sys.stdout.write(data.decode(errors="replace"))


def cmd_bench(jar_path, url, n):
    jar = load_jar(jar_path)
    u = urllib.parse.urlsplit(url)
    if u.scheme == "http":
        c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=20)
    else:
        c = Conn(u.hostname, u.port or 443, timeout=20)
    h = {"Host": u.netloc, "Cookie": cookie_header(jar, u.hostname, u.path)}
    path = u.path + ("?" + u.query if u.query else "")
    times = []
    for _ in range(int(n) + 10):
        t = time.perf_counter()
        c.request("GET", path, headers=h)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise SystemExit(f"status {r.status} from {url}")
        times.append(time.perf_counter() - t)
    times = sorted(times[10:])  # the first ten warm up
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1000
    print(f"p50 {pick(0.5):.2f} p99 {pick(0.99):.2f}")


def cmd_get(jar_path, url, opts):
    jar = load_jar(jar_path)
    headers, body, method, navigate = {}, None, "GET", True
    fields, files = [], []
    i = 0
    while i < len(opts):
        if opts[i] == "-H":
            k, _, v = opts[i + 1].partition(":")
            headers[k.strip()] = v.strip()
            i += 2
        elif opts[i] == "--fetch":
            navigate = False
            i += 1
        elif opts[i] == "--post":
            method, body = "POST", opts[i + 1]
            i += 2
        elif opts[i] == "--field":
            fields.append(opts[i + 1].partition("="))
            i += 2
        elif opts[i] == "--upload":
            files.append((opts[i + 1], opts[i + 2]))
            i += 3
        else:
            raise SystemExit(f"unknown option {opts[i]}")
    if fields or files:
        boundary = "agentboxscenario" + os.urandom(8).hex()
        parts = []
        for k, _, v in fields:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
        for path, name in files:
            with open(path, "rb") as f:
                data = f.read()
            head = f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            head += "Content-Type: application/octet-stream\r\n\r\n"
            parts.append(head.encode() + data + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        method, body = "POST", b"".join(parts)
        headers.setdefault("Content-Type", f"multipart/form-data; boundary={boundary}")
    status, hs, data = request(jar, method, url, headers=headers, body=body, navigate=navigate)
    save_jar(jar_path, jar)
    print(f"status {status}")
    for k, v in hs:
        print(f"header {k}: {v}")
    print()
    sys.stdout.write(data.decode(errors="replace"))


def ws_open(jar, url, origin):
    u = urllib.parse.urlsplit(url)
    s = connect(u.hostname, u.port or 443)
    key = base64.b64encode(os.urandom(16)).decode()
    path = u.path + ("?" + u.query if u.query else "")
    lines = [
        f"GET {path} HTTP/1.1",
        f"Host: {u.netloc}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Protocol: tty",
        f"Origin: {origin}",
        "Sec-Fetch-Mode: websocket",
        "Sec-Fetch-Site: same-origin",
    ]
    c = cookie_header(jar, u.hostname, u.path)
    if c:
        lines.append(f"Cookie: {c}")
    s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    resp = b""
    while b"\r\n\r\n" not in resp:
        chunk = s.recv(4096)
        if not chunk:
            break
        resp += chunk
    head, _, rest = resp.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return s, status, head.decode(errors="replace"), rest


def ws_send(s, payload, opcode=2):
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        hdr = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


class Frames:
    """Server frames of one WebSocket. Like a browser, it answers every ping
    with a pong (ttyd pings every 30 s and closes a connection that does not
    answer). A timeout leaves a partly received frame in the buffer."""

    def __init__(self, s, buf):
        self.s, self.buf = s, buf

    def parse(self):
        """(opcode, payload, length) of the first whole frame, or None."""
        b = self.buf
        if len(b) < 2:
            return None
        n, at = b[1] & 0x7F, 2
        if n == 126:
            if len(b) < 4:
                return None
            (n,), at = struct.unpack("!H", b[2:4]), 4
        elif n == 127:
            if len(b) < 10:
                return None
            (n,), at = struct.unpack("!Q", b[2:10]), 10
        if len(b) < at + n:
            return None
        return b[0] & 0x0F, b[at : at + n], at + n

    def next(self):
        while True:
            frame = self.parse()
            if frame is None:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise EOFError
                self.buf += chunk
                continue
            op, data, used = frame
            self.buf = self.buf[used:]
            if op == 9:
                ws_send(self.s, data, opcode=10)
                continue
            return op, data


def term_open(jar_path, url, origin, columns=100, rows=30):
    """A ttyd WebSocket with its first message sent, as Frames; None (after
    printing the refusal) unless the handshake gave 101."""
    jar = load_jar(jar_path)
    s, status, head, rest = ws_open(jar, url, origin)
    print(f"status {status}")
    if status != 101:
        print(head)
        return None
    ws_send(s, json.dumps({"AuthToken": "", "columns": columns, "rows": rows}).encode())
    return s, Frames(s, rest)


def cmd_term(jar_path, url, origin, text, expect, timeout=20):
    t = term_open(jar_path, url, origin)
    if t is None:
        return
    s, f = t
    s.settimeout(timeout)
    time.sleep(0.5)
    ws_send(s, b"0" + text.encode() + b"\r")
    seen, deadline = b"", time.time() + timeout
    try:
        while time.time() < deadline and expect.encode() not in seen:
            op, data = f.next()
            if op == 8:
                break
            if op in (1, 2) and data[:1] == b"0":
                seen += data[1:]
    except (EOFError, socket.timeout, OSError):
        pass
    print("output " + json.dumps(seen.decode(errors="replace")))
    print("found" if expect.encode() in seen else "not found")


def cmd_echo(jar_path, url, origin, count):
    """Keystroke echo: types one character at a time and times the first
    output frame that comes back for each (keystroke -> Caddy -> web
    daemon -> ttyd -> tmux -> shell -> and back). Prints p50/p90/max."""
    t = term_open(jar_path, url, origin)
    if t is None:
        return
    s, f = t
    # Let the attach redraw settle: read until 1 s passes without output.
    s.settimeout(1)
    try:
        while True:
            f.next()
    except (EOFError, socket.timeout, OSError):
        pass
    s.settimeout(10)
    times = []
    try:
        for _ in range(int(count)):
            t0 = time.perf_counter()
            ws_send(s, b"0x")
            while True:
                op, data = f.next()
                if op in (1, 2) and data[:1] == b"0":
                    break
            times.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.05)
    except (EOFError, socket.timeout, OSError) as e:
        print(f"error after {len(times)} keystrokes: {e}")
    ws_send(s, b"0\x15")  # Ctrl-U: clear the typed line
    if not times:
        print("no echo")
        return
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"echo {len(times)} keystrokes p50 {pick(0.5):.1f} ms p90 {pick(0.9):.1f} ms max {times[-1]:.1f} ms")


def cmd_hold(jar_path, url, origin, seconds):
    t = term_open(jar_path, url, origin, 80, 24)
    if t is None:
        return
    s, f = t
    s.settimeout(1)
    start = time.time()
    while time.time() - start < float(seconds):
        try:
            op, _ = f.next()
            if op == 8:
                print(f"closed after {time.time() - start:.1f} s")
                return
        except socket.timeout:
            continue
        except (EOFError, OSError):
            print(f"closed after {time.time() - start:.1f} s")
            return
    print(f"open after {seconds} s")


def cmd_inbox(jar_path, url, seconds):
    jar = load_jar(jar_path)
    u = urllib.parse.urlsplit(url)
    c = Conn(u.hostname, u.port or 443)
    c.request("GET", u.path + (f"?{u.query}" if u.query else ""), headers={
        "Host": u.netloc, "User-Agent": "agent-box-scenario", "Accept": "text/event-stream",
        "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty",
        "Cookie": cookie_header(jar, u.hostname, u.path)})
    r = c.getresponse()
    print(f"status {r.status} {r.getheader('Content-Type')}", flush=True)
    if r.status != 200:
        return
    # a keep-alive comes at least every 25 s, so a blocking read returns
    c.sock.settimeout(60)
    start, name, data = time.time(), "", []
    while time.time() - start < float(seconds):
        try:
            line = r.readline()
        except (socket.timeout, TimeoutError):
            print("no keep-alive within 60 s", flush=True)
            return
        except (OSError, http.client.HTTPException):
            line = b""
        if not line:
            print(f"ended after {time.time() - start:.1f} s", flush=True)
            return
        line = line.decode(errors="replace").rstrip("\n")
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and name:
            users = sorted({v for d in data for v in _values(d, 'name="user" value="')})
            items = sum(d.count("<li class=") - d.count('<li class="quiet"') for d in data)
            print(f"event {int(time.time() * 1000)} {name} users={','.join(users)} items={items}")
            for d in data:
                print(f"data {d}")
            sys.stdout.flush()
            name, data = "", []
    print(f"open after {seconds} s", flush=True)


def _values(text, prefix):
    out, i = [], text.find(prefix)
    while i >= 0:
        j = text.find('"', i + len(prefix))
        out.append(text[i + len(prefix) : j])
        i = text.find(prefix, j)
    return out


def cmd_flood(seconds, period, out, addrs):
    """Guesses from many addresses in one process (a thread each, one
    kept-alive connection each, as a browser would), so that the load in
    the box is the server's, not the client's start-up and handshakes."""
    import threading

    box = os.environ.get("AGENT_BOX_WEB_DOMAIN", "box.localhost:8443")
    host, _, port = box.partition(":")
    port = int(port or 443)
    results, lock = [], threading.Lock()
    start = threading.Barrier(len(addrs))

    class SourceConn(http.client.HTTPSConnection):
        def __init__(self, source):
            super().__init__(host, port, timeout=60)
            self.source = source

        def connect(self):
            self.sock = connect(self.host, self.port, self.source)

    def loop(addr):
        conn = SourceConn(addr)
        start.wait()
        end, n = time.monotonic() + seconds, 0
        while True:
            n += 1
            login = os.environ.get("AGENT_BOX_FLOOD_LOGIN") or f"guess-{addr}-{n}"
            body = urllib.parse.urlencode({"login": login, "password": "wrong", "user": "", "next": "/"})
            t0 = time.monotonic()
            # a request that fails on a kept-alive connection the server had
            # closed is sent again on a new one, as browsers do
            for attempt in (1, 2):
                try:
                    conn.request("POST", "/auth/login", body=body, headers={
                        "Host": box, "Content-Type": "application/x-www-form-urlencoded",
                        "Sec-Fetch-Site": "same-origin", "Origin": f"https://{box}"})
                    r = conn.getresponse()
                    r.read()
                    status = str(r.status)
                    break
                except (OSError, http.client.HTTPException):
                    conn.close()
                    conn = SourceConn(addr)
                    status = "000"
            with lock:
                results.append(f"{status} {int((time.monotonic() - t0) * 1000)}")
            left = t0 + period - time.monotonic()
            if period <= 0 or time.monotonic() + max(left, 0) >= end or os.path.exists(out + ".stop"):
                break
            if left > 0:
                time.sleep(left)
        conn.close()

    threads = [threading.Thread(target=loop, args=(a,)) for a in addrs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(out, "a") as f:
        f.write("".join(r + "\n" for r in results))


def serve(d):
    """Runs requests from weblib.sh's client(): DIR/req carries the number
    of arguments, the arguments and the caller's AGENT_BOX_* variables
    (NAME=VALUE), each ended by a NUL; the command's stdout and stderr go
    to DIR/out and DIR/err, and its exit status to DIR/resp."""
    while True:
        with open(os.path.join(d, "req"), "rb") as f:
            parts = f.read().split(b"\0")[:-1]
        if not parts:
            continue
        n = int(parts[0])
        argv = [p.decode() for p in parts[1 : 1 + n]]
        env = dict(p.decode().split("=", 1) for p in parts[1 + n :])
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for name, fd in (("out", 1), ("err", 2)):
                    f = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.dup2(f, fd)
                    os.close(f)
                for k in [k for k in os.environ if k.startswith("AGENT_BOX_")]:
                    del os.environ[k]
                os.environ.update(env)
                main(["webclient.py"] + argv)
                code = 0
            except SystemExit as e:
                if isinstance(e.code, int):
                    code = e.code
                elif e.code is not None:
                    print(e.code, file=sys.stderr)
                else:
                    code = 0
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        with open(os.path.join(d, "resp"), "w") as f:
            f.write(f"{os.waitstatus_to_exitcode(status)}\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "serve":
        return serve(argv[2])
    if len(argv) < 3:
        raise SystemExit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "login" and len(args) in (3, 4):
        cmd_login(*args)
    elif cmd == "open" and len(args) == 2:
        cmd_open(*args)
    elif cmd == "get" and len(args) >= 2:
        cmd_get(args[0], args[1], args[2:])
    elif cmd == "term" and len(args) == 5:
        cmd_term(*args)
    elif cmd == "echo" and len(args) == 4:
        cmd_echo(*args)
    elif cmd == "hold" and len(args) == 4:
        cmd_hold(*args)
    elif cmd == "inbox" and len(args) == 3:
        cmd_inbox(*args)
    elif cmd == "mint" and len(args) == 2:
        cmd_mint(*args)
    elif cmd == "visit" and len(args) == 2:
        cmd_visit(*args)
    elif cmd == "app" and len(args) == 4:
        cmd_app(*args)
    elif cmd == "bench" and len(args) == 3:
        cmd_bench(*args)
    elif cmd == "flood" and len(args) >= 4:
        cmd_flood(float(args[0]), float(args[1]), args[2], args[3:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
