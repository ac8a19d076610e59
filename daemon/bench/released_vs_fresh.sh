#!/usr/bin/env bash
# Does a successor that waited in Slurm behind --dependency=afterany and is released early
# (`scontrol update dependency=`, what mirage does through libslurm) queue as fast as the same job
# submitted fresh at that moment? Measured on the local cluster with accounting (the age factor
# needs slurmdbd), it decides whether a campaign keeps a fallback successor in Slurm by default.
#
#   daemon/bench/released_vs_fresh.sh [--dir DIR]     (root; scripts/install-deps.sh first)
#
# Two nodes. A 2-node blocker holds both; then, at t0, `pred` (the running segment's stand-in),
# `control` (a job submitted fresh at t0) and `released` (afterany:pred) are queued. At t1 = t0 +
# 75 s `released` is released and `fresh` submitted; after one priority recalculation each job's
# eligible time, accrue time and priority are printed. Then the blocker and pred are cancelled so
# one node frees with `released` and `fresh` both waiting: which starts first is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-released-vs-fresh}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    *) echo "usage: $0 [--dir DIR]" >&2; exit 2 ;;
  esac
done
# The age factor grows by 1000 over PriorityMaxAge (5 min): 75 s of age is about 250 points.
eval "$(bash tests/slurm/cluster.sh start --nodes 2 --dir "$dir" --accounting \
  --conf PriorityMaxAge=5 --conf PriorityWeightFairshare=0 | tail -n 1)"
trap 'bash tests/slurm/cluster.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
work="$dir/out"
mkdir -p "$work"
cd "$work"
sb() { sbatch --parsable -o /dev/null "$@" --wrap "sleep 600"; }
field() { scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1; }

blocker=$(sb -N2 -t 10 -J blocker)
pred=$(sb -N1 -t 10 -J pred)
control=$(sb -N1 -t 5 -J control)
released=$(sb -N1 -t 5 -J released --dependency="afterany:$pred")
echo "t0: blocker $blocker holds both nodes; pred $pred, control $control, released $released (afterany:$pred) queued"
sleep 75
scontrol update jobid="$released" dependency=
fresh=$(sb -N1 -t 5 -J fresh)
echo "t1 = t0 + 75 s: released $released, submitted fresh $fresh"
echo "waiting 65 s for a priority recalculation (PriorityCalcPeriod 1 min)"
sleep 65
printf '%-9s %-6s %-19s %-19s %-19s %s\n' job id submitted eligible accrue priority
for j in control:$control released:$released fresh:$fresh; do
  printf '%-9s %-6s %-19s %-19s %-19s %s\n' "${j%%:*}" "${j#*:}" "$(field "${j#*:}" SubmitTime)" \
    "$(field "${j#*:}" EligibleTime)" "$(field "${j#*:}" AccrueTime)" "$(field "${j#*:}" Priority)"
done
scancel "$blocker"
sleep 4
scancel "$pred"
sleep 4
for j in released:$released fresh:$fresh; do
  echo "${j%%:*} ($(field "${j#*:}" JobId)): $(field "${j#*:}" JobState)"
done
