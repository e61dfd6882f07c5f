#!/usr/bin/env python3
"""A listener that takes the place of a unix socket and serves its own page:
what an attacker who can run code would put there, for the scenarios.

Usage: listen.py SOCKET PAGE MARK [--take]
  --take  first move SOCKET aside (to SOCKET.real), as a takeover would
  MARK    a file the listener writes its pid to once it listens
Every connection gets "HTTP/1.1 200 OK" with PAGE in an HTML document.
"""

import os
import socket
import sys


def main(argv):
    if len(argv) not in (4, 5) or len(argv) == 5 and argv[4] != "--take":
        raise SystemExit(__doc__)
    path, text, mark = argv[1], argv[2], argv[3]
    if len(argv) == 5:
        os.rename(path, path + ".real")
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    s.listen(8)
    with open(mark, "w") as f:
        f.write(str(os.getpid()))
    page = f"<html><script>document.title='{text}'</script>{text}</html>".encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(page)
    while True:
        c, _ = s.accept()
        c.settimeout(2)
        try:
            c.recv(65536)
            c.sendall(head + page)
        except OSError:
            pass
        c.close()


if __name__ == "__main__":
    main(sys.argv)
