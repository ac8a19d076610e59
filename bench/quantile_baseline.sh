#!/usr/bin/env bash
# The `quantile` baseline on every shared trace (docs/results/quantile-baseline.md): on each
# trace's evaluation month (bench/trace_windows.sh), calibrated replay, 1- and 8-node chains of two
# 48-hour segments, concurrent overlap, `mirage eval --sweep-risk` of average, forecast,
# forecast-recent, static and quantile. quantile's wait distribution is fitted on the 90 days
# before the month; the month's own real jobs check its intervals. Prints per case the intervals'
# coverage, and at budgets of 15 min, 1 h and 4 h of overlap per boundary the frontier point
# quantile reaches beside the best the other baselines reach; asserts nothing.
#   bench/quantile_baseline.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | fitted / checked jobs | in 50% / 90% interval | budget | quantile | other baselines | wall |"
echo "|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$1" != theta ] || return 0
  for chain in $sizes; do
    local start wall
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # $machine is a list of words
    "$mirage" eval --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
      --to "$to" --policies average,forecast,forecast-recent,static,quantile --sweep-risk --json \
      2>/dev/null >"$out/eval.json" || { echo "| $name | $chain | (eval failed) |||||"; continue; }
    wall=$(echo "$(date +%s.%N) - $start" | bc)
    python3 - "$out/eval.json" "$name" "$chain" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pol = d["policies"]
w = d["wait_distribution"]
points = list(pol)
def cell(name):
    p = pol[name]
    return (f"`{name}` {p['mean_interruption_h']:.2f} h / {100 * p['zero_interruption_share']:.0f}% / "
            f"{p['mean_overlap_h']:.2f} h")
def best(names, budget_h):
    fits = [n for n in names if pol[n]["mean_overlap_h"] <= budget_h + 1e-9]
    if not fits:
        return "none"
    return cell(min(fits, key=lambda n: (pol[n]["mean_interruption_h"], pol[n]["mean_overlap_h"])))
quantile = [n for n in points if n.startswith("quantile")]
others = [n for n in points if not n.startswith("quantile") and n != "oracle"]
for i, (label, budget) in enumerate([("15 min", 0.25), ("1 h", 1.0), ("4 h", 4.0)]):
    head = (f"| {sys.argv[2]} | {sys.argv[3]} | {w['fitted_jobs']} / {w['checked_jobs']} | "
            f"{100 * w['in_50_interval']:.0f}% / {100 * w['in_90_interval']:.0f}% |") if i == 0 else "| | | | |"
    tail = f" {float(sys.argv[4]):.1f} s |" if i == 0 else " |"
    print(f"{head} {label} | {best(quantile, budget)} | {best(others, budget)} |{tail}")
PY
  done
}

for_each_trace "$which" run_trace
