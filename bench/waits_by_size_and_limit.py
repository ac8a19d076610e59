#!/usr/bin/env python3
"""Mean real and replayed wait by job size and time limit, from a per-job CSV.

Reads the CSV of `mirage simulate --trace T --out jobs.csv` and prints, for every class of nodes
(up to the powers of two from the smallest job up) and limit (1, 3, 6, 12, 24 hours, longer)
with at least `--min-jobs` jobs (default 100), the jobs, the mean real wait and the mean
replayed wait in hours: where a cluster's policy by size or length shows that the replay lacks.
    bench/waits_by_size_and_limit.py jobs.csv [--min-jobs N]
"""
import csv
import sys
from collections import defaultdict

LIMIT_HOURS = [1, 3, 6, 12, 24]


def node_class(nodes, smallest):
    top = smallest
    while top < nodes:
        top *= 2
    return top


def main(args):
    min_jobs = 100
    if "--min-jobs" in args:
        i = args.index("--min-jobs")
        min_jobs = int(args[i + 1])
        del args[i:i + 2]
    with open(args[0], newline="") as f:
        # -1: the log gives no start, or the replay never started the job
        rows = [r for r in csv.DictReader(f)
                if float(r["real_wait_s"]) >= 0 and float(r["sim_wait_s"]) >= 0]
    if not rows:
        sys.exit(f"{args[0]}: no job with both a real and a replayed start")
    smallest = min(int(r["nodes"]) for r in rows)
    groups = defaultdict(lambda: [0, 0.0, 0.0])
    for r in rows:
        limit = int(r["time_limit_s"])
        key = (node_class(int(r["nodes"]), smallest), min(
            (h for h in LIMIT_HOURS if limit <= h * 3600), default=10**6))
        g = groups[key]
        g[0] += 1
        g[1] += float(r["real_wait_s"])
        g[2] += float(r["sim_wait_s"])
    print(f"{'nodes up to':>11}  {'limit':>7}  {'jobs':>6}  {'real h':>7}  {'replay h':>8}")
    for (nodes, hours), (n, real, sim) in sorted(groups.items()):
        if n >= min_jobs:
            limit = f"<= {hours} h" if hours in LIMIT_HOURS else f"> {LIMIT_HOURS[-1]} h"
            print(f"{nodes:>11}  {limit:>7}  {n:>6}  {real / n / 3600:>7.1f}  {sim / n / 3600:>8.1f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
