#!/usr/bin/env bash
# The baselines' risk frontiers on every shared trace (docs/results/risk-frontiers.md): `mirage
# eval --sweep-risk` of average, forecast, forecast-recent and static on each trace's evaluation
# month (the one bench/learned_verdict.sh and bench/calibrated_eval.sh use), 1-node and 8-node
# chains of two 48-hour segments, both overlap modes, in both worlds (the calibrated replay and
# the log's real waits: --successor-wait both). The operating point `campaign add --max-overlap`
# would take at budgets of 15 min, 1 h and 4 h of overlap per boundary (the least interruption
# within the budget) is chosen forward, on the 28 days of samples whose episodes end before the
# month (--pick-before), and judged on the month beside the point hindsight (the month's own
# frontier) takes. Prints one row per case and world; asserts nothing.
#   bench/risk_frontiers.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
# MIRAGE_BENCH_KEEP=DIR keeps each case's `mirage eval --json` (and its wall time) there;
# MIRAGE_BENCH_REREAD=1 with it prints the table from those kept instead of running eval again.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | overlap | world | reactive | within 15 min: picked before -> here (hindsight) | within 1 h | within 4 h | wall |"
echo "|---|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

# See for_each_trace: the evaluation month. Theta is not among the traces of the issue.
run_trace() {
  local name=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  [ "$1" != theta ] || return 0
  for chain in $sizes; do
    for overlap in concurrent handoff; do
      local wall
      local json="${MIRAGE_BENCH_KEEP:-$out}/$1-$chain-$overlap.json"
      # shellcheck disable=SC2086 # $machine is a list of words
      kept_eval "$json" --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
        --to "$to" --overlap "$overlap" --policies average,forecast,forecast-recent,static \
        --sweep-risk --successor-wait both --pick-before 28d ${MIRAGE_CLUSTER_FLAGS:-} ||
        { echo "| $name | $chain | $overlap | (eval failed) ||||||"; continue; }
      python3 - "$json" "$name" "$chain" "$overlap" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
worlds = d.get("forward_pick", {}).get("worlds", {})
# `!`: the point's two worlds differ by more than 1.5x on interruption or overlap (eval's flag).
disagree = set(d.get("worlds_disagree", []))
def cell(c):
    flag = " !" if c["policy"] in disagree else ""
    return f"`{c['policy']}`{flag} {c['interruption_h']:.2f} / {c['overlap_h']:.2f} h"
def within(points, budget_h):
    fits = [c for c in points if c["overlap_h"] <= budget_h + 1e-9]
    return min(fits, key=lambda c: (c["interruption_h"], c["overlap_h"])) if fits else None
for i, world in enumerate(["replay", "logged"]):
    w = worlds.get(world, {})
    wall = f"{float(sys.argv[5]):.1f} s" if i == 0 else ""
    if "here" not in w:
        why = w.get("no_figures", "no earlier window")
        print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {world} | {why} | | | | {wall} |")
        continue
    # No pick (the earlier samples lack figures) but the month has them: hindsight still reads.
    why = f"; {w['no_figures']}" if "there" not in w else ""
    here = {c["policy"]: c for c in w["here"]}
    cells = []
    for budget in (0.25, 1.0, 4.0):
        picked, hind = within(w.get("there", []), budget), within(w["here"], budget)
        if picked is None:
            cells.append("none before" + (f" (hindsight {cell(hind)})" if hind else ""))
            continue
        if picked["policy"] not in here:
            # eval leaves a point out where it was cut off on every sample the others finished.
            cells.append(f"`{picked['policy']}` cut off on the month" +
                         (f" (hindsight {cell(hind)})" if hind else ""))
            continue
        same = hind and hind["policy"] == picked["policy"]
        cells.append(cell(here[picked["policy"]]) + (" (the same)" if same else
                     f" ({cell(hind)})" if hind else " (none)"))
    # reactive is left out of the points where every one of its episodes was cut off.
    r = here.get("reactive")
    if r is None:
        m = d["policies"]["reactive"] if world == "replay" else d["logged_world"]["policies"]["reactive"]
        r = f"`reactive` cut off on all {m['censored']} samples (at least {m['censored_min_interruption_h']:.0f} h)"
    else:
        r = cell(r)
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {world} | {r}{why} | "
          f"{' | '.join(cells)} | {wall} |")
PY
    done
  done
}

for_each_trace "$which" run_trace
