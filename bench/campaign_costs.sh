#!/usr/bin/env bash
# What whole two-week campaigns cost on LS6 (docs/results/campaign-costs.md): `mirage eval --work`
# of 8-node chains of 48-hour segments, start times every 24 h over December 2022 and January
# 2023, both overlap modes, on the uncalibrated replay, the replay calibrated on the whole log (in
# sample) and the one calibrated on the months before December only (--fit-until, forward), each
# beside the world of the log's real waits (--successor-wait both; LOGGED_WINDOW either side of a
# submission, 3d by default). Prints one markdown row per policy (Mirage's per-boundary figures
# beside the campaign's, in the replay, then the logged world's campaign), then per eval the policy
# chosen forward (--pick-before 28d, eval's default with --work) in each world beside hindsight's,
# and each eval's wall time; asserts nothing.
#   bench/campaign_costs.sh [POLICIES] [LOGGED_WINDOW]   (default: reactive,average,forecast,forecast-recent 3d)
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
trace=${MIRAGE_TRACES:-../shared/traces}/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz
policies="${1:-reactive,average,forecast,forecast-recent}"
window="${2:-3d}"
# MIRAGE_BENCH_KEEP=DIR keeps each eval's `--json` (and its wall time) there;
# MIRAGE_BENCH_REREAD=1 with it prints the tables from those kept instead of running eval again.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

echo "| replay | overlap | policy | boundary: int. / zero / overlap | makespan | stretch | idle GPU-h | overlap GPU-h | restart GPU-h | charged GPU-h | compared / incomplete | logged world ($window): makespan / idle / overlap / charged GPU-h, compared |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
picks=()
for calibration in none infer forward; do
  flags="--calibration $calibration"
  [ "$calibration" != forward ] || flags="--fit-until 2022-12-01"
  for overlap in concurrent handoff; do
    wall=""
    json="${MIRAGE_BENCH_KEEP:-$out}/costs-$calibration-$overlap-$window.json"
    # LS6's A100 nodes hold 3 GPUs each.
    # shellcheck disable=SC2086 # $flags is a list of words
    kept_eval "$json" --trace "$trace" --cluster-nodes 88 --gpus-per-node 3 --nodes 8 \
      --from 2022-12-01 --to 2023-02-01 --every 24h --work 336 --overlap "$overlap" \
      $flags --successor-wait both --logged-window "$window" --policies "$policies" ||
      { echo "| $calibration | $overlap | (eval failed) ||||||||||"; continue; }
    python3 - "$json" "$calibration" "$overlap" "$policies" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
logged = d["logged_world"]
for name in sys.argv[4].split(","):
    p = d["policies"][name]
    c = p["campaign"]
    if "no_figures" in logged:
        lw = logged["no_figures"]
    else:
        lc = logged["policies"][name]["campaign"]
        if lc["compared"] == 0:
            lw = f"none compared ({lc['incomplete']} incomplete)"
        else:
            # `!`: the two worlds differ by more than 1.5x on idle or overlap GPU-hours (eval's flag).
            flag = " !" if name in d.get("worlds_disagree", []) else ""
            lw = (f"{lc['makespan_h']:.1f} h / {lc['idle_gpu_h']:.0f} / {lc['overlap_gpu_h']:.1f} / "
                  f"{lc['charged_gpu_h']:.0f}, {lc['compared']}{flag}")
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {name} | {p['mean_interruption_h']:.2f} h / "
          f"{100 * p['zero_interruption_share']:.1f}% / {p['mean_overlap_h']:.2f} h | "
          f"{c['makespan_h']:.1f} h | {c['stretch']:.3f} | {c['idle_gpu_h']:.0f} | "
          f"{c['overlap_gpu_h']:.1f} | {c['restart_gpu_h']:.1f} | {c['charged_gpu_h']:.0f} | "
          f"{c['compared']} / {c['incomplete']} | {lw} |")
PY
    picks+=("$calibration|$overlap|$json|$wall")
  done
done

echo
echo "| replay | overlap | world | picked before -> here | hindsight | wall |"
echo "|---|---|---|---|---|---|"
for row in "${picks[@]}"; do
  IFS='|' read -r calibration overlap json wall <<<"$row"
  python3 - "$json" "$calibration" "$overlap" "$wall" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pick = d.get("forward_pick", {})
worlds = {"replay": d["policies"], "logged": d["logged_world"].get("policies", {})}
def cost(world, n):
    c = worlds[world][n]["campaign"]
    return f"`{n}` {c['makespan_h']:.1f} h / {c['charged_gpu_h']:.0f} GPU-h"
for i, world in enumerate(["replay", "logged"]):
    w = pick.get("worlds", {}).get(world)
    wall = f"{float(sys.argv[4]):.0f} s" if i == 0 else ""
    if not w:
        why = pick.get("note", "no earlier window")
        print(f"| {sys.argv[2]} | {sys.argv[3]} | {world} | {why} | | {wall} |")
        continue
    picked = cost(world, w["picked"]["policy"]) if "picked" in w else w.get("no_figures", "none")
    hind = cost(world, w["hindsight"]["policy"]) if "hindsight" in w else w.get("no_figures", "none")
    print(f"| {sys.argv[2]} | {sys.argv[3]} | {world} | {picked} | {hind} | {wall} |")
PY
done
