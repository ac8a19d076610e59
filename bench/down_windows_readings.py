#!/usr/bin/env python3
"""Two readings of a log's down windows, checked against the log's own jobs.

The calibration's down windows (`[down] windows` in the file `mirage trace calibrate` writes) are
spans in which no job started on a nearly idle machine. Two other readings would give the same
idle hours, and the log can tell them apart:
  - a drain for a large job: the first job to start after the window then needs more nodes than
    stood free through it;
  - an outage announced ahead as a maintenance reservation: Slurm starts no job whose time limit
    runs into a MAINT reservation, so few jobs started in the hours before a window would have
    limits running past its start, fewer than at the same hour a week or two away.
Reads the per-job CSV of `mirage simulate --trace T --out jobs.csv` (real starts, ends, limits)
and the calibration file; prints both checks; asserts nothing.
    bench/down_windows_readings.py jobs.csv T.calibration.toml [HOURS ...]   (default 6 24)
"""
import bisect
import calendar
import csv
import sys
import time
import tomllib


def unix(iso):
    return calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%S"))


def main():
    jobs_csv, calibration = sys.argv[1], sys.argv[2]
    hours = [float(h) for h in sys.argv[3:]] or [6.0, 24.0]
    with open(calibration, "rb") as f:
        cal = tomllib.load(f)
    windows = [(unix(a), unix(b)) for a, b in cal.get("down", {}).get("windows", [])]
    jobs = []  # (real start, real end, limit, nodes), the jobs the log saw start
    with open(jobs_csv) as f:
        for r in csv.DictReader(f):
            if r["real_start"] in ("", "-1"):
                continue
            jobs.append((float(r["real_start"]), float(r["real_end"]), float(r["time_limit_s"]),
                         int(r["nodes"])))
    jobs.sort()
    starts = [j[0] for j in jobs]
    if not windows:
        print("no down windows in", calibration)
        return

    # Nodes the log's jobs held at each moment, from a sweep over starts and ends.
    events = sorted([(s, n) for s, _, _, n in jobs] + [(e, -n) for _, e, _, n in jobs])
    event_times, held, c = [], [], 0
    for t, n in events:
        c += n
        event_times.append(t)
        held.append(c)

    def nodes_held(t):
        i = bisect.bisect_right(event_times, t) - 1
        return held[i] if i >= 0 else 0

    machine = max(held)
    drains = 0
    for _, end in windows:
        i = bisect.bisect_left(starts, end)
        if i < len(jobs) and jobs[i][3] > machine - nodes_held(end - 1):
            drains += 1
    print(f"windows {len(windows)}; ended by a job needing more nodes than stood free "
          f"(a drain): {drains}")

    def crossing(moments, span):
        crossed = started = 0
        for t in moments:
            for s, _, limit, _ in jobs[bisect.bisect_left(starts, t - span):bisect.bisect_left(starts, t)]:
                started += 1
                crossed += s + limit > t
        return crossed, started

    # Control moments: each window's start a week or two away, two days clear of every window.
    lo, hi = starts[0] + max(hours) * 3600, starts[-1]
    control = [a + d * 86400 for a, _ in windows for d in (-14, -7, 7, 14)]
    control = [t for t in control if lo < t < hi and
               not any(a - 2 * 86400 < t < b + 2 * 86400 for a, b in windows)]
    for h in hours:
        c1, n1 = crossing([a for a, _ in windows], h * 3600)
        c2, n2 = crossing(control, h * 3600)
        print(f"started in the {h:g} h before a window, limit running past its start: "
              f"{c1}/{n1} = {c1 / max(n1, 1):.0%}; at the same hour a week or two away: "
              f"{c2}/{n2} = {c2 / max(n2, 1):.0%}")


if __name__ == "__main__":
    main()
