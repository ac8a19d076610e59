#!/usr/bin/env bash
# The `quantile` baseline on every shared trace (docs/results/quantile-baseline.md): on each
# trace's evaluation month (bench/trace_windows.sh), 1- and 8-node chains of two 48-hour
# segments, concurrent overlap, `mirage eval --sweep-risk` of average, forecast, forecast-recent,
# static and quantile, in both worlds (the calibrated replay and the log's real waits:
# --successor-wait both). quantile's wait distribution is fitted on the 90 days before the month;
# the month's own real jobs check its intervals. At budgets of 15 min, 1 h and 4 h of overlap per
# boundary, the point with the least interruption within the budget is chosen forward, on the 28
# days of samples whose episodes end before the month (--pick-before; quantile fitted again
# before them), among quantile's levels and among the other baselines' points, and judged on the
# month beside hindsight's choice. Prints per case the coverage and those points; asserts nothing.
#   bench/quantile_baseline.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
# MIRAGE_BENCH_KEEP=DIR keeps each case's `mirage eval --json` (and its wall time) there;
# MIRAGE_BENCH_REREAD=1 with it prints the table from those kept instead of running eval again.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | fitted / checked jobs | in 50% / 90% interval | world | budget | quantile: picked before -> here (hindsight) | other baselines: picked before -> here (hindsight) | wall |"
echo "|---|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$1" != theta ] || return 0
  for chain in $sizes; do
    local wall
    local json="${MIRAGE_BENCH_KEEP:-$out}/$1-$chain.json"
    # shellcheck disable=SC2086 # $machine is a list of words
    kept_eval "$json" --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
      --to "$to" --policies average,forecast,forecast-recent,static,quantile --sweep-risk \
      --successor-wait both --pick-before 28d ${MIRAGE_CLUSTER_FLAGS:-} ||
      { echo "| $name | $chain | (eval failed) |||||"; continue; }
    python3 - "$json" "$name" "$chain" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["wait_distribution"]
worlds = d.get("forward_pick", {}).get("worlds", {})
# `!`: the point's two worlds differ by more than 1.5x on interruption or overlap (eval's flag).
disagree = set(d.get("worlds_disagree", []))
def cell(c):
    flag = " !" if c["policy"] in disagree else ""
    return f"`{c['policy']}`{flag} {c['interruption_h']:.2f} / {c['overlap_h']:.2f} h"
def within(points, budget_h):
    fits = [c for c in points if c["overlap_h"] <= budget_h + 1e-9]
    return min(fits, key=lambda c: (c["interruption_h"], c["overlap_h"])) if fits else None
def choice(wj, keep, budget):
    here = {c["policy"]: c for c in wj["here"]}
    picked = within([c for c in wj.get("there", []) if keep(c["policy"])], budget)
    hind = within([c for c in wj["here"] if keep(c["policy"])], budget)
    if picked is None:
        return "none before" + (f" ({cell(hind)})" if hind else "")
    if picked["policy"] not in here:
        # eval leaves a point out where it was cut off on every sample the others finished.
        return f"`{picked['policy']}` cut off on the month" + (f" ({cell(hind)})" if hind else "")
    same = hind and hind["policy"] == picked["policy"]
    return cell(here[picked["policy"]]) + (" (the same)" if same else f" ({cell(hind)})" if hind else "")
first = True
for world in ("replay", "logged"):
    wj = worlds.get(world, {})
    for label, budget in [("15 min", 0.25), ("1 h", 1.0), ("4 h", 4.0)]:
        head = (f"| {sys.argv[2]} | {sys.argv[3]} | {w['fitted_jobs']} / {w['checked_jobs']} | "
                f"{100 * w['in_50_interval']:.0f}% / {100 * w['in_90_interval']:.0f}% |") if first else "| | | | |"
        tail = f" {float(sys.argv[4]):.1f} s |" if first else " |"
        first = False
        if "here" not in wj:
            print(f"{head} {world} | {label} | {wj.get('no_figures', 'no earlier window')} | |{tail}")
            continue
        # No pick (the earlier samples lack figures) but the month has them: hindsight still reads.
        why = f" ({wj['no_figures']})" if "there" not in wj and budget == 0.25 else ""
        q = choice(wj, lambda n: n.startswith("quantile"), budget) + why
        o = choice(wj, lambda n: not n.startswith("quantile"), budget)
        print(f"{head} {world} | {label} | {q} | {o} |{tail}")
PY
  done
}

for_each_trace "$which" run_trace
