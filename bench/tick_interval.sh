#!/usr/bin/env bash
# What a coarser tick costs (docs/results/tick-interval.md): `mirage eval` of reactive, average and
# forecast on LS6, February 2023, calibrated replay, with the policy asked every 5, 10 or 15
# minutes, as the daemon (exact fallback), as `mirage tick` (fallback at the next tick), and as
# `mirage tick` with fallback_lead set to the tick interval. A tick's phase against the jobs is
# arbitrary, so each row pools four runs whose samples start 0, 3:45, 7:30 and 11:15 past the
# hour. Prints the page's two markdown tables (1-node chains sampled hourly, 8-node every 4 h);
# asserts nothing.
#   bench/tick_interval.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
trace=${MIRAGE_TRACES:-../shared/traces}/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

for chain in 1 8; do
  every=$([ "$chain" = 1 ] && echo 1h || echo 4h)
  for tick in 5 10 15; do
    for driver in daemon tick lead; do
      flags=(--decision-interval "${tick}m")
      [ "$driver" = daemon ] || flags+=(--tick)
      [ "$driver" = lead ] && flags+=(--fallback-lead "${tick}m")
      for off in 00:00:00 00:03:45 00:07:30 00:11:15; do
        "$mirage" eval --trace "$trace" --cluster-nodes 88 --nodes "$chain" \
          --from "2023-02-01T$off" --to 2023-03-01 --every "$every" \
          --policies reactive,average,forecast "${flags[@]}" --successor-wait replay \
          --pick-before 0 --json 2>/dev/null \
          >"$out/$chain-$tick-$driver-$off.json"
      done
    done
  done
done

python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]

def pooled(chain, tick, driver, policy, key):
    total = n = 0.0
    for f in glob.glob(os.path.join(out, f"{chain}-{tick}-{driver}-*.json")):
        p = json.load(open(f))["policies"][policy]
        total += p[key] * p["samples"]
        n += p["samples"]
    return total / n, int(n)

drivers = {"daemon": "daemon, lead 1 min", "tick": "tick, lead 1 min", "lead": "tick, lead {} min"}
for chain in (1, 8):
    n = pooled(chain, 5, "daemon", "reactive", "mean_interruption_h")[1]
    print(f"\n## {chain}-node chains ({n} boundaries per row)\n")
    if chain == 1:
        print("| tick interval | driver | reactive: mean int. | reactive: zero int. | reactive: overlap "
              "| average: mean int. | forecast: mean int. | forecast: zero int. | forecast: overlap |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| tick interval | driver | reactive: mean int. | reactive: zero int. | average: mean int. "
              "| average: zero int. | forecast: mean int. | forecast: zero int. |")
        print("|---|---|---|---|---|---|---|---|")
    for tick in (5, 10, 15):
        for driver in ("daemon", "tick", "lead"):
            g = lambda policy, key: pooled(chain, tick, driver, policy, key)[0]
            name = drivers[driver].format(tick)
            if chain == 1:
                m = lambda h: f"{60 * h:.1f} min"
                cells = [m(g("reactive", "mean_interruption_h")),
                         f"{100 * g('reactive', 'zero_interruption_share'):.1f}%",
                         m(g("reactive", "mean_overlap_h")), m(g("average", "mean_interruption_h")),
                         m(g("forecast", "mean_interruption_h")),
                         f"{100 * g('forecast', 'zero_interruption_share'):.1f}%",
                         m(g("forecast", "mean_overlap_h"))]
            else:
                cells = []
                for policy in ("reactive", "average", "forecast"):
                    cells += [f"{g(policy, 'mean_interruption_h'):.2f} h",
                              f"{100 * g(policy, 'zero_interruption_share'):.1f}%"]
            print(f"| {tick} min | {name} | " + " | ".join(cells) + " |")
PY
