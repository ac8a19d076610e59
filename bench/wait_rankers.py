#!/usr/bin/env python3
"""What ranks a log's real waits: the replay, or things a replay only partly knows.

Reads the per-job CSV of `mirage simulate --trace T --out jobs.csv` and prints Spearman's rank
correlation (ties given their mean rank, as `mirage trace fidelity` does) of the real waits with:
  replay            the simulated waits;
  area              the job's time limit times its nodes, and nothing else;
  day mean          the mean real wait of the jobs submitted the same UTC day;
  day, class mean   the mean real wait of the jobs submitted the same day in the same size class
                    (1 node, 2-7, 8+) and with a limit under or over 4 hours;
  replay, real days the simulated waits of each day scaled so that their mean is the day's real
                    mean: the replay's order within each day, every day's congestion right.
The last three read the real waits: they are yardsticks, not predictors. A replay that got each
day's congestion exactly right and nothing within the day would rank the waits as the day mean
does; one that also got each class's share of it right, as the day-and-class mean does; this
replay, had it got every day's congestion right, as the last column does.
    bench/wait_rankers.py jobs.csv [jobs2.csv ...]
"""
import csv
import math
import sys
from collections import defaultdict

DAY = 86400


def ranks(values):
    order = sorted(range(len(values)), key=values.__getitem__)
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(ra)
    ma, mb = sum(ra) / n, sum(rb) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    saa = sum((x - ma) ** 2 for x in ra)
    sbb = sum((y - mb) ** 2 for y in rb)
    return sab / math.sqrt(saa * sbb) if saa > 0 and sbb > 0 else 0.0


def size_class(nodes):
    return 1 if nodes <= 1 else 2 if nodes < 8 else 8


def main(paths):
    print(f"{'jobs csv':<40} {'jobs':>7}  {'replay':>6}  {'area':>6}  {'day':>6}  {'day+class':>9}"
          f"  {'replay, real days':>17}")
    for path in paths:
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f)
                    if r["real_wait_s"] not in ("", "-1") and r["sim_wait_s"] != ""]
        real = [float(r["real_wait_s"]) for r in rows]
        sim = [float(r["sim_wait_s"]) for r in rows]
        area = [float(r["time_limit_s"]) * int(r["nodes"]) for r in rows]
        day_key = [int(r["submit"]) // DAY for r in rows]
        class_key = [(d, size_class(int(r["nodes"])), int(r["time_limit_s"]) >= 4 * 3600)
                     for d, r in zip(day_key, rows)]

        def group_mean(keys, waits):
            sums, counts = defaultdict(float), defaultdict(int)
            for k, w in zip(keys, waits):
                sums[k] += w
                counts[k] += 1
            return [sums[k] / counts[k] for k in keys]

        # Each day's simulated waits scaled to the day's real mean (shifted where the replay waited
        # none of them at all, which keeps them tied).
        real_day, sim_day = group_mean(day_key, real), group_mean(day_key, sim)
        real_days = [w * r / s if s > 0 else w + r for w, r, s in zip(sim, real_day, sim_day)]
        print(f"{path[-40:]:<40} {len(rows):>7}  {spearman(real, sim):>6.2f}  "
              f"{spearman(real, area):>6.2f}  {spearman(real, real_day):>6.2f}  "
              f"{spearman(real, group_mean(class_key, real)):>9.2f}  {spearman(real, real_days):>17.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
