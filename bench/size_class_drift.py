#!/usr/bin/env python3
"""What the queue said of one size class at its jobs' submissions, in a fit window and in the
month after (docs/results/wait-model.md, tried and dropped: the class's queue as inputs).

  bench/size_class_drift.py LOG.gz MIN_NODES MAX_NODES FIT_FROM FIT_TO MONTH_FROM MONTH_TO

For the jobs of MIN_NODES..MAX_NODES nodes submitted in each window, the median and 90th
percentile of their own waits, how many had a job of the class running (pending) at their
submission, the median over them of the running jobs' median wait (the pending jobs' median
time waited so far), and the mean count of each. A job counts from its submission, strictly
before the moment, until its start (pending) and its end (running); jobs without a start are left
out, as the logged queue leaves them. Reads sacct logs of LS6's columns (JobID JobName UID Start
Submit End Priority TimelimitRaw ExitCode NNodes). Prints figures, asserts nothing.
"""
import datetime as dt
import gzip
import statistics as st
import sys


def seconds(text):
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp()
    except ValueError:
        return None


def read(path, low, high):
    jobs = []
    for line in gzip.open(path, "rt"):
        f = line.split()
        if len(f) < 10 or not f[0][:1].isdigit():
            continue
        start, submit, end = seconds(f[3]), seconds(f[4]), seconds(f[5])
        if None in (start, submit, end) or not low <= int(f[9]) <= high:
            continue
        jobs.append((submit, start, end))
    return jobs


def median_or_none(v):
    return st.median(v) / 3600 if v else None


def describe(jobs, name, begin, end):
    rows = []
    for submit, start, _ in jobs:
        if not begin <= submit < end:
            continue
        running = [s - q for q, s, e in jobs if q < submit and s <= submit < e]
        pending = [submit - q for q, s, _ in jobs if q < submit < s]
        rows.append(((start - submit) / 3600, median_or_none(running), median_or_none(pending),
                     len(running), len(pending)))
    if not rows:
        print(f"{name}: no jobs")
        return
    waits = sorted(r[0] for r in rows)
    run = [r[1] for r in rows if r[1] is not None]
    pend = [r[2] for r in rows if r[2] is not None]
    print(f"{name}: {len(rows)} jobs; own wait median {st.median(waits):.1f} h, p90 "
          f"{waits[int(0.9 * (len(waits) - 1))]:.1f} h; a class job running at {len(run)} "
          f"submissions (their median wait: median {st.median(run) if run else 0:.1f} h), pending "
          f"at {len(pend)} (waited so far: median {st.median(pend) if pend else 0:.1f} h); mean "
          f"count running {st.mean(r[3] for r in rows):.1f}, pending {st.mean(r[4] for r in rows):.1f}")


def main():
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    path, low, high = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fit_from, fit_to, month_from, month_to = (seconds(a) for a in sys.argv[4:8])
    jobs = read(path, low, high)
    describe(jobs, f"fit window {sys.argv[4]} .. {sys.argv[5]}", fit_from, fit_to)
    describe(jobs, f"month {sys.argv[6]} .. {sys.argv[7]}", month_from, month_to)


if __name__ == "__main__":
    main()
