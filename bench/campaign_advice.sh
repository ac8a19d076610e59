#!/usr/bin/env bash
# Which policy to use, per cluster, chain size and overlap mode, by what whole two-week campaigns
# cost (docs/results/campaign-advice.md). On each trace's evaluation month (bench/trace_windows.sh;
# LS6, whose log ends with February, January: a campaign may need 30 days of log, and no learned
# model, trained on November to January, is judged there), campaigns of 336 h of compute in
# 48-hour segments start every 24 h on the calibrated replay; every baseline at every setting of
# its risk knob (quantile included) and, where bench/learned_agents.sh trained them (models in
# $MIRAGE_BENCH_DIR), the learned models, in both overlap modes. Prints per case reactive's
# campaign, the point that costs least when an hour the campaign stands idle or late costs as
# much as an hour charged twice (each a segment's GPUs, or nodes), and the learned models' best
# with whether any baseline point finishes no later for no more charge; asserts nothing.
#   bench/campaign_advice.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
models="${MIRAGE_BENCH_DIR:-build/learned-bench}"
which="${1:-all}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | overlap | campaigns | reactive: makespan / charged | least cost | learned models' best | on the frontier? | wall |"
echo "|---|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$name" != theta ] || return 0
  for chain in $sizes; do
    local list
    list=$(trained_models "$models" "$name" "$chain")
    if [ "$name" = ls6 ]; then label="LS6, Jan 2023" from=2023-01-01 to=2023-01-29 list=""; fi
    for overlap in concurrent handoff; do
      local start wall
      start=$(date +%s.%N)
      # shellcheck disable=SC2086 # $machine and the flags are lists of words
      "$mirage" eval --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
        --to "$to" --every 24h --work 336 --overlap "$overlap" --policies "$baseline_points$list" \
        ${MIRAGE_CLUSTER_FLAGS:-} --json 2>/dev/null >"$out/eval.json" ||
        { echo "| $label | $chain | $overlap | (eval failed) ||||||"; continue; }
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      python3 - "$out/eval.json" "$label" "$chain" "$overlap" "$wall" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
pol, setup = d["policies"], d["campaign"]
g, work = setup["gpus_per_segment"], setup["work_h"]
unit = "GPU-h" if setup["gpus_known"] else "node-h"
def c(n):
    return pol[n]["campaign"]
def cost(n):  # an idle or late hour of the campaign's GPUs = an hour charged twice
    return (c(n)["makespan_h"] - work) * g + (c(n)["charged_gpu_h"] - work * g)
def cell(n):
    short = os.path.basename(n).replace(".mirage-model", "")
    return f"`{short}` {c(n)['makespan_h']:.1f} h / {c(n)['charged_gpu_h']:.0f} {unit}"
learned = [n for n in pol if n.endswith(".mirage-model")]
baselines = [n for n in pol if n not in learned and n != "oracle"]
# Ties (points that decided alike) go to reactive, then to the least charged.
best = min(baselines, key=lambda n: (round(cost(n), 6), n != "reactive", c(n)["charged_gpu_h"]))
row = (f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {c('reactive')['compared']} "
       f"({c('reactive')['incomplete']} cut off) | {cell('reactive')} | {cell(best)} |")
if learned:
    m = min(learned, key=cost)
    mk, ch = c(m)["makespan_h"], c(m)["charged_gpu_h"]
    dom = [n for n in baselines if c(n)["makespan_h"] <= mk and c(n)["charged_gpu_h"] <= ch
           and (c(n)["makespan_h"], c(n)["charged_gpu_h"]) != (mk, ch)]
    by = min(dom, key=lambda n: (c(n)["charged_gpu_h"], n != "reactive")) if dom else None
    row += f" {cell(m)} | {'no: ' + cell(by) if by else 'yes'} |"
else:
    row += " not trained | |"
print(row + f" {float(sys.argv[5]):.0f} s |")
PY
    done
  done
}

for_each_trace "$which" run_trace
