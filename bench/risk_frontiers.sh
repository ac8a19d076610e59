#!/usr/bin/env bash
# The baselines' risk frontiers on every shared trace (docs/results/risk-frontiers.md): `mirage
# eval --sweep-risk` of average, forecast, forecast-recent and static on each trace's evaluation
# month (the one bench/learned_agents.sh and bench/calibrated_eval.sh use), on the calibrated
# replay, 1-node and 8-node chains of two 48-hour segments, both overlap modes. Prints, per
# case, the operating point `campaign add --max-overlap` would take at budgets of 15 min, 1 h and
# 4 h of overlap per boundary; asserts nothing.
#   bench/risk_frontiers.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | overlap | reactive | within 15 min | within 1 h | within 4 h | wall |"
echo "|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

# See for_each_trace: the evaluation month. Theta is not among the traces of the issue.
run_trace() {
  local name=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$1" != theta ] || return 0
  for chain in $sizes; do
    for overlap in concurrent handoff; do
      local start wall
      start=$(date +%s.%N)
      # shellcheck disable=SC2086 # $machine is a list of words
      "$mirage" eval --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
        --to "$to" --overlap "$overlap" --policies average,forecast,forecast-recent,static \
        --sweep-risk --json 2>/dev/null >"$out/eval.json"
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      python3 - "$out/eval.json" "$name" "$chain" "$overlap" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pol = d["policies"]
pareto = [f["policy"] for f in d["frontier"] if f["pareto"]]
def cell(name):
    p = pol[name]
    return (f"`{name}` {p['mean_interruption_h']:.2f} h / {100 * p['zero_interruption_share']:.0f}% / "
            f"{p['mean_overlap_h']:.2f} h")
def within(budget_h):
    fits = [n for n in pareto if pol[n]["mean_overlap_h"] <= budget_h + 1e-9]
    if not fits:
        return "none"
    return cell(min(fits, key=lambda n: (pol[n]["mean_interruption_h"], pol[n]["mean_overlap_h"])))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {cell('reactive')} | {within(0.25)} | "
      f"{within(1)} | {within(4)} | {float(sys.argv[5]):.1f} s |")
PY
    done
  done
}

for_each_trace "$which" run_trace
