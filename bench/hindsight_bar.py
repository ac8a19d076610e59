#!/usr/bin/env python3
"""What beating a baseline in every load bucket would cost, in hindsight.

Reads `mirage eval --policies BASELINE,oracle,... --out DIR` (samples.csv and
oracle_instants.csv: what every 10-minute submission instant would have given) and prints, per
bucket, the baseline's mean interruption, boundaries without interruption and overlap, against
a choice of instants made knowing the outcome that has more boundaries without interruption
and less mean interruption than the baseline, at as little overlap as this greedy finds: the
cheapest zero-gap instants first, the other boundaries at their least interruption without
overlap. The overlap it prints is an upper bound on the least such a choice needs.
    bench/hindsight_bar.py DIR [BASELINE]        (default baseline: average)
"""
import sys
from collections import defaultdict

from eval_dir import oracle_instants, policy_samples


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, baseline = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "average")
    instants = {key: [(int(r["interruption_s"]), int(r["overlap_s"])) for r in tried]
                for key, tried in oracle_instants(out).items()}
    rows = defaultdict(list)
    for r in policy_samples(out, baseline):
        rows[r["bucket"]].append(r)

    print(f"{'bucket':8} {'n':>4} | {baseline}: {'int.':>8} {'zero':>5} {'overlap':>8} |"
          f" hindsight: {'int.':>8} {'zero':>5} {'overlap':>8}")
    total_base = total_hind = 0.0
    for bucket in ("low", "medium", "heavy"):
        items = rows.get(bucket, [])
        if not items:
            continue
        n = len(items)
        base_int = sum(int(r["interruption_s"]) for r in items)
        base_zero = sum(int(r["interruption_s"]) == 0 for r in items)
        base_ovl = sum(int(r["overlap_s"]) for r in items)
        options = []
        for r in items:
            tried = instants.get((r["sample_time"], r["boundary"]))
            if not tried:
                sys.exit(f"no oracle instants for {r['sample_time']} boundary {r['boundary']}")
            zero = [o for i, o in tried if i == 0]
            clean = [i for i, o in tried if o == 0]
            options.append((min(zero) if zero else None, min(clean) if clean else None))
        # Zero-gap instants bought cheapest first; everyone else at least interruption.
        order = sorted((o for o in options if o[0] is not None), key=lambda o: o[0])
        found = None
        for k in range(base_zero + 1, len(order) + 1):
            bought = order[:k]
            rest = list(options)
            for o in bought:
                rest.remove(o)
            interruption = sum(o[1] if o[1] is not None else 0 for o in rest)
            overlap = sum(o[0] for o in bought) + sum(o[0] for o in rest if o[1] is None)
            if interruption < base_int:
                found = (interruption, k, overlap)
                break
        base = f"{base_int / n / 3600:7.2f} h {base_zero:5} {base_ovl / n / 3600:6.2f} h"
        total_base += base_ovl
        if found is None:
            print(f"{bucket:8} {n:4} | {base} | this greedy finds no choice of instants that beats it")
            continue
        total_hind += found[2]
        print(f"{bucket:8} {n:4} | {base} | {found[0] / n / 3600:7.2f} h {found[1]:5}"
              f" {found[2] / n / 3600:6.2f} h")
    samples = sum(len(v) for v in rows.values())
    print(f"overlap over all boundaries: {baseline} {total_base / samples / 3600:.2f} h,"
          f" hindsight {total_hind / samples / 3600:.2f} h")


if __name__ == "__main__":
    main()
