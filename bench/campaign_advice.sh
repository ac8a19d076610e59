#!/usr/bin/env bash
# Which policy to use, per cluster, chain size and overlap mode, by what whole two-week campaigns
# cost (docs/results/campaign-advice.md), chosen forward. On each trace's evaluation month
# (bench/trace_windows.sh; LS6, whose log ends with February, January: a campaign may need 30
# days of log), campaigns of 336 h of compute in 48-hour segments start every 24 h, in both worlds
# (the calibrated replay, and the log's real waits: --successor-wait both); every baseline at
# every setting of its risk knob (quantile included, fitted on the 90 days before the month it
# is run on). `mirage eval` picks the point that costs least when an hour the campaign stands
# idle or late costs as much as an hour charged twice on the campaigns started in the 28 days
# whose campaigns all end before the month (--pick-before), then judges it on the month. Prints
# per case reactive's campaign and, in each world, the forward pick's cost on the month beside
# hindsight's pick (the least-cost point of the month itself); asserts nothing. The learned
# models are judged the same way by bench/learned_verdict.sh (docs/results/learned-agents.md).
#   bench/campaign_advice.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
# MIRAGE_BENCH_KEEP=DIR keeps each case's `mirage eval --json` (and its wall time) there;
# MIRAGE_BENCH_REREAD=1 with it prints the table from those kept instead of running eval again.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | overlap | campaigns r / l | reactive: replay / logged | replay: picked before -> here | replay: hindsight | logged: picked before -> here | logged: hindsight | wall |"
echo "|---|---|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$name" != theta ] || return 0
  if [ "$name" = ls6 ]; then label="LS6, Jan 2023" from=2023-01-01 to=2023-01-29; fi
  for chain in $sizes; do
    for overlap in concurrent handoff; do
      local wall
      local json="${MIRAGE_BENCH_KEEP:-$out}/$name-$chain-$overlap.json"
      # shellcheck disable=SC2086 # $machine and the flags are lists of words
      kept_eval "$json" --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
        --to "$to" --every 24h --work 336 --overlap "$overlap" --policies "$baseline_points" \
        --successor-wait both --pick-before 28d ${MIRAGE_CLUSTER_FLAGS:-} ||
        { echo "| $label | $chain | $overlap | (eval failed) |||||||"; continue; }
      python3 - "$json" "$label" "$chain" "$overlap" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
unit = "GPU-h" if d["campaign"]["gpus_known"] else "node-h"
worlds = {"replay": d["policies"], "logged": d["logged_world"]["policies"]}
disagree = set(d.get("worlds_disagree", []))
def camp(world, n):
    return worlds[world][n]["campaign"]
def cell(world, n):
    c = camp(world, n)
    if c["compared"] == 0:
        return "none compared"
    flag = " !" if n in disagree else ""
    return f"`{n}` {c['makespan_h']:.1f} h / {c['charged_gpu_h']:.0f} {unit}{flag}"
pick = d.get("forward_pick", {}).get("worlds", {})
def picked(world):
    w = pick.get(world)
    if not w:
        return "no earlier window"
    if "picked" not in w:
        return w.get("no_figures", "none")
    if "picked_here" not in w:
        return f"`{w['picked']['policy']}` cut off on the month"
    return priced(w, "picked_here")
def hindsight(world):
    w = pick.get(world, {})
    return priced(w, "hindsight") if "hindsight" in w else w.get("no_figures", "none")
# A pick's own figures on the month: eval prices the points on the campaigns they all finished,
# leaving out a point cut off on every campaign (then no campaign has every point finished, and
# the policies' table compares none).
def priced(w, key):
    p = w[key]
    flag = " !" if p["policy"] in disagree else ""
    out = w.get("left_out_here", [])
    left = f" (priced without the {len(out)} points cut off on every campaign)" if out else ""
    return f"`{p['policy']}` {p['makespan_h']:.1f} h / {p['charged']:.0f} {unit}{flag}{left}"
n = f"{camp('replay', 'reactive')['compared']} / {camp('logged', 'reactive')['compared']}"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {n} | "
      f"{cell('replay', 'reactive')}; {cell('logged', 'reactive')} | {picked('replay')} | "
      f"{hindsight('replay')} | {picked('logged')} | {hindsight('logged')} | "
      f"{float(sys.argv[5]):.0f} s |")
PY
    done
  done
}

for_each_trace "$which" run_trace
