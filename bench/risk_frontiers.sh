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
traces=../shared/traces
which="${1:-all}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | overlap | reactive | within 15 min | within 1 h | within 4 h | wall |"
echo "|---|---|---|---|---|---|---|---|"
run_trace() {
  local name=$1 trace=$2 machine=$3 from=$4 to=$5 sizes=$6
  for chain in $sizes; do
    for overlap in concurrent handoff; do
      local start wall
      start=$(date +%s.%N)
      # shellcheck disable=SC2086 # $machine is a list of words
      "$mirage" eval --trace "$trace" $machine --lenient --chain-nodes "$chain" --from "$from" \
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

want() { [ "$which" = "$1" ] || [ "$which" = all ]; }
if want ls6; then
  run_trace "LS6, Feb 2023" "$traces/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz" "--nodes 88" \
    2023-02-01 2023-03-01 "1 8"
fi
if want sdsc; then
  run_trace "SDSC-SP2, Sep 1998" "$traces/swf-classic/SDSC-SP2-1998-4.2-cln.swf.gz" "" \
    1998-09-01 1998-10-01 "1 8"
fi
if want kth; then
  run_trace "KTH-SP2, Feb 1997" "$traces/swf-classic/KTH-SP2-1996-2.1-cln.swf.gz" "" \
    1997-02-01 1997-03-01 "1 8"
fi
if want ctc; then
  run_trace "CTC-SP2, Dec 1996" "$traces/swf-classic/CTC-SP2-1996-3.1-cln.swf.gz" "" \
    1996-12-01 1997-01-01 "1 8"
fi
if want hpc2n; then
  run_trace "HPC2N, Jan 2003" "$traces/swf-classic/HPC2N-2002-2.2-cln.swf.gz" "" \
    2003-01-01 2003-02-01 "1 8"
fi
