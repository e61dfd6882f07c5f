#!/usr/bin/env python3
"""The usage limits' tries as one supervisor's log gives them (its journal
lines on stdin, `-o cat`): python3 limittries.py "NAME..." GAP checks that
each named session was resumed, and that every try the supervisor booked
for them (`... (...; the try at TIME)`, exact to the millisecond) is GAP
seconds or more from the next one: the cap of usageLimits.perMinute. It
prints what it measured (the tries' span, the smallest gap, how late the
resumes came) and exits 1, saying why, when the cap or a resume is missing."""
import re
import sys
from datetime import datetime

BOOKED = re.compile(r'session "([^"]+)": limited .*the try at (\S+)\)$')
RESUMED = re.compile(r'session "([^"]+)": resuming its conversation after the usage limit \(try \d+, (\S+) after its time\)$')
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(go):
    """A Go duration's string ("1.5s", "14ms", "1m2.5s") in seconds."""
    parts = re.findall(r"([0-9.]+)(ns|µs|us|ms|s|m|h)", go)
    if not parts or "".join(n + u for n, u in parts) != go:
        raise ValueError(f"not a Go duration: {go!r}")
    return sum(float(n) * UNITS[u] for n, u in parts)


def main():
    names, gap = set(sys.argv[1].split()), float(sys.argv[2])
    booked, late = set(), {}
    for line in sys.stdin:
        line = line.rstrip("\n")
        if m := BOOKED.search(line):
            if m[1] in names:
                booked.add((datetime.fromisoformat(m[2].replace("Z", "+00:00")).timestamp(), m[1]))
        elif (m := RESUMED.search(line)) and m[1] in names:
            late.setdefault(m[1], []).append(seconds(m[2]))
    missing = sorted(names - late.keys())
    if missing:
        print(f"never resumed: {' '.join(missing)}")
        return 1
    times = sorted(booked)
    if len(times) < 2:
        print(f"{len(times)} tries booked: nothing to space")
        return 1
    gaps = [(b[0] - a[0], a[1], b[1]) for a, b in zip(times, times[1:])]
    least = min(gaps)
    print(
        f"{len(times)} tries of {len(names)} sessions over {times[-1][0] - times[0][0]:.3f} s, "
        f"the closest {least[0]:.3f} s apart ({least[1]}, {least[2]}); "
        f"each resumed at most {max(max(v) for v in late.values()) * 1000:.0f} ms after its time"
    )
    # the log rounds to the millisecond
    close = [g for g in gaps if g[0] < gap - 0.002]
    for g in close:
        print(f"{g[1]} and {g[2]}: tries {g[0]:.3f} s apart, under the cap's {gap} s")
    return 1 if close else 0


if __name__ == "__main__":
    sys.exit(main())
