#!/usr/bin/env python3
"""What a policy would have given had it submitted every successor some hours earlier.

Reads `mirage eval --policies POLICY,oracle --out DIR` and, for each shift, looks up every
boundary's outcome at POLICY's submission instant moved that much earlier (rounded down to the
oracle's 10-minute instants; before the first instant the first is used) in
oracle_instants.csv. It prints, per load bucket, mean interruption, boundaries without
interruption and mean overlap: the price of catching windows by submitting early everywhere.
    bench/earlier_by.py DIR POLICY [HOURS...]     (default: 0 1 2 3)
"""
import bisect
import sys
from collections import defaultdict

from eval_dir import epoch, oracle_instants, policy_samples


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, policy = sys.argv[1], sys.argv[2]
    shifts = [float(h) for h in sys.argv[3:]] or [0, 1, 2, 3]
    # Per boundary: the instants' times (sorted, for bisect) and their outcomes.
    instants = {key: ([epoch(r["successor_submit"]) for r in tried],
                      [(int(r["interruption_s"]), int(r["overlap_s"])) for r in tried])
                for key, tried in oracle_instants(out).items()}
    rows = policy_samples(out, policy)

    print(f"{policy}, every successor submitted earlier by:")
    print(f"{'shift':>6} | " + " | ".join(f"{b:^27}" for b in ("low", "medium", "heavy", "all")))
    for shift in shifts:
        per_bucket = defaultdict(list)
        for r in rows:
            tried = instants.get((r["sample_time"], r["boundary"]))
            if not tried:
                sys.exit(f"no oracle instants for {r['sample_time']} boundary {r['boundary']}")
            times, outcomes = tried
            when = epoch(r["successor_submit"]) - int(shift * 3600)
            outcome = outcomes[max(bisect.bisect_right(times, when) - 1, 0)]
            per_bucket[r["bucket"]].append(outcome)
            per_bucket["all"].append(outcome)
        cells = []
        for b in ("low", "medium", "heavy", "all"):
            got = per_bucket.get(b, [])
            if not got:
                cells.append(f"{'-':^27}")
                continue
            n = len(got)
            cells.append(f"{sum(i for i, _ in got) / n / 3600:5.2f} h {sum(i == 0 for i, _ in got):4}/{n:<4}"
                         f" {sum(o for _, o in got) / n / 3600:5.2f} h")
        print(f"{shift:5.1f}h | " + " | ".join(cells))


if __name__ == "__main__":
    main()
