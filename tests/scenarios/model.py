#!/usr/bin/env python3
"""Questions about the scripted model's request log (internal/scriptedmodel):
one JSON object per request, with "path", "last" (the newest user message's
text), "tools" (how many tools the request offers: an agent's turn offers
some, its side requests, such as Codex's title of a conversation, none) and
"body" (the whole request).

  model.py LOG count TEXT          turns whose newest user message is TEXT
                                   (or ends with a line TEXT: Claude puts a note
                                   before the first prompt after /clear)
  model.py LOG carries TEXT EARLIER [PATH]   exit 0 if the newest turn
                                   (to PATH, such as /v1/responses) whose
                                   newest user message is TEXT carries EARLIER
                                   anywhere in its messages (Claude's
                                   "messages", Codex's "input")
  model.py LOG grep TEXT [PATH]    exit 0 if any request's body (to PATH, such
                                   as /v1/responses) holds TEXT
"""
import json
import sys


def records(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def newest_is(r, text):
    if not r.get("tools"):
        return False
    last = r.get("last") or ""
    return last == text or last.endswith("\n" + text)


def main():
    log, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    recs = list(records(log))
    if cmd == "count":
        print(sum(1 for r in recs if newest_is(r, args[0])))
        return 0
    if cmd == "carries":
        path = args[2] if len(args) > 2 else None
        hits = [r for r in recs if newest_is(r, args[0]) and path in (None, r.get("path"))]
        if not hits:
            print("no request with that newest message")
            return 1
        body = hits[-1].get("body") or {}
        messages = body.get("messages") or body.get("input") or []
        msgs = json.dumps(messages, ensure_ascii=False)
        if args[1] in msgs:
            return 0
        print(f"{len(hits)} requests with that newest message; the newest has {len(messages)} messages:")
        for m in messages:
            print(" ", m.get("role") or m.get("type"), json.dumps(m.get("content") or m.get("output"), ensure_ascii=False)[:200])
        return 1
    if cmd == "grep":
        path = args[1] if len(args) > 1 else None
        return 0 if any(args[0] in json.dumps(r.get("body"), ensure_ascii=False) for r in recs if path in (None, r.get("path"))) else 1
    print("unknown command", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
