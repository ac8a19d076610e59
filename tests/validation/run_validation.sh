#!/usr/bin/env bash
# The faithfulness validation, end to end: starts a real 4-node Slurm cluster (tests/slurm/
# cluster.sh), replays a workload cut from the LS6 trace on it (replay.sh), stops it, replays the
# same jobs in mirage::Simulator with the same slurm.conf (validate_slurm compare) and prints the
# start-time errors and start-order agreement for backfill=slurm, easy and none, twice: with the
# simulator as it is (a job's nodes are free the instant it ends), and with Slurm's node
# turnaround added to every runtime (the time between a job's end and its nodes' next start:
# 0.4-0.7 s here, fitted per mode in 0..1 s), simulated in 100 ms units. The second isolates the
# scheduling decisions from that per-job latency, which time compression magnifies 600-fold.
#
#   tests/validation/run_validation.sh [--jobs 300] [--compress 600] [--out DIR] [--build-dir DIR]
#   tests/validation/run_validation.sh --short        # the CI version: 60 jobs, bounds checked
#
# Options:
#   --jobs N            jobs cut from the trace (default 300)
#   --compress X        time compression (default 600: 1 s here = 10 min of the trace)
#   --max-runtime S     cap on compressed runtimes, seconds (default 20; bounds the replay length)
#   --from TIME         window start, UTC (default 2023-02-17T00:00:00, a busy week on LS6)
#   --trace PATH        trace to cut (default: the LS6 A100 log in the real-logs folder,
#                       $MIRAGE_TRACES; see docs/traces.md)
#   --workload CSV      replay this workload instead of cutting one
#   --out DIR           results (default /tmp/mirage-validation)
#   --cluster-dir DIR   the cluster's state (default $MIRAGE_SLURM_DIR or /tmp/mirage-slurm-val:
#                       short, as slurmstepd's socket paths under it must fit 108 bytes); it
#                       listens on ports $MIRAGE_SLURM_CTLD_PORT (16917) and 17101-17104, so
#                       it can run beside a cluster.sh cluster on the default ports
#   --build-dir DIR     where validate_slurm was built (default $MIRAGE_BUILD_DIR or <repo>/build)
#   --bin PATH          the validate_slurm executable itself
#   --sched-param k=v   SchedulerParameters override for slurm.conf (and so for the simulator)
#   --conf Key=Value    other slurm.conf override (e.g. PriorityWeightJobSize=0)
#   --overhead-ms MS    node turnaround for the second comparison (default: fitted in 0..1000)
#   --min-order A --max-median-abs-error S   bounds on backfill=slurm with turnaround; exit 3
#   --raw-min-order A   bound on backfill=slurm's order agreement without turnaround
#   --require-backfill-gain   fail unless backfill=slurm is closer to Slurm than backfill=none
#   --short             60 jobs, runtimes <= 10 s, the committed workload-short.csv, CI bounds
#   --keep-cluster      leave the cluster running afterwards
# Exit: 0 ok, 3 bounds violated, 77 skipped (not root or no Slurm packages), else an error.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

die() {
  echo "run_validation.sh: error: $*" >&2
  exit 1
}
note() { echo "run_validation.sh: $*" >&2; }

jobs=300 compress=600 max_runtime=20 from="2023-02-17T00:00:00"
trace="${MIRAGE_TRACES:-$repo/../shared/traces}/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz"
workload="" out="/tmp/mirage-validation" build_dir="${MIRAGE_BUILD_DIR:-$repo/build}" bin=""
cluster_dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm-val}"
export MIRAGE_SLURM_CTLD_PORT="${MIRAGE_SLURM_CTLD_PORT:-16917}"
export MIRAGE_SLURM_NODE_PORT="${MIRAGE_SLURM_NODE_PORT:-17101}"
short=0 keep=0 min_order="" max_median="" raw_min_order="" overhead_ms="" gain=0
cluster_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="${2:?}"; shift 2 ;;
    --compress) compress="${2:?}"; shift 2 ;;
    --max-runtime) max_runtime="${2:?}"; shift 2 ;;
    --from) from="${2:?}"; shift 2 ;;
    --trace) trace="${2:?}"; shift 2 ;;
    --workload) workload="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --cluster-dir) cluster_dir="${2:?}"; shift 2 ;;
    --build-dir) build_dir="${2:?}"; shift 2 ;;
    --bin) bin="${2:?}"; shift 2 ;;
    --sched-param) cluster_args+=(--sched-param "${2:?}"); shift 2 ;;
    --conf) cluster_args+=(--conf "${2:?}"); shift 2 ;;
    --min-order) min_order="${2:?}"; shift 2 ;;
    --max-median-abs-error) max_median="${2:?}"; shift 2 ;;
    --raw-min-order) raw_min_order="${2:?}"; shift 2 ;;
    --overhead-ms) overhead_ms="${2:?}"; shift 2 ;;
    --require-backfill-gain) gain=1; shift ;;
    --short) short=1; shift ;;
    --keep-cluster) keep=1; shift ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

if [ $short -eq 1 ]; then
  # The CI version: the committed cut (validate_slurm cut --jobs 60 --max-runtime 10, defaults
  # otherwise), so CI needs no trace. Bounds set with margin over what README.md records.
  [ -n "$workload" ] || workload="$here/workload-short.csv"
  [ -n "$min_order" ] || min_order=0.985
  [ -n "$max_median" ] || max_median=2
  # Raw agreement falls as the machine's node turnaround grows (the simulator's lead builds
  # along the queue): 0.991-0.993 here, 0.968 on a CI machine; a wrong priority gives 0.79.
  [ -n "$raw_min_order" ] || raw_min_order=0.95
  gain=1
fi

# Skips (exit 77, CTest's SKIP_RETURN_CODE) where a real cluster cannot run.
if [ "$(id -u)" -ne 0 ]; then
  note "skipped: needs root (SlurmUser=root, munged)"
  exit 77
fi
for b in slurmctld slurmd sbatch munged; do
  if ! command -v "$b" >/dev/null; then
    note "skipped: '$b' not installed (scripts/install-deps.sh installs slurmctld slurmd slurm-client munge)"
    exit 77
  fi
done

[ -n "$bin" ] || bin="$build_dir/tests/validation/validate_slurm"
[ -x "$bin" ] || die "no validate_slurm at '$bin': build it (cmake --build $build_dir --target validate_slurm) or pass --bin"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if [ -z "$workload" ]; then
  [ -f "$trace" ] || die "no trace at '$trace' (pass --trace or --workload)"
  workload="$out/workload.csv"
  "$bin" cut --trace "$trace" --out "$workload" --jobs "$jobs" --compress "$compress" \
    --max-runtime "$max_runtime" --from "$from"
else
  [ -f "$workload" ] || die "no workload at '$workload'"
  cp "$workload" "$out/workload.csv" 2>/dev/null || true
  workload="$out/workload.csv"
fi

cleanup() {
  if [ $keep -eq 0 ]; then
    "$repo/tests/slurm/cluster.sh" stop --dir "$cluster_dir" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

compare=("$bin" compare --workload "$workload" --real "$out/real.csv" --slurm-conf "$out/slurm.conf")
if [ -n "$overhead_ms" ]; then
  turnaround=(--unit-ms 100 --overhead-ms "$overhead_ms")
else
  turnaround=(--unit-ms 100 --fit-overhead-ms 1000)
fi
bounds=()
[ -z "$min_order" ] || bounds+=(--min-order-agreement "$min_order")
[ -z "$max_median" ] || bounds+=(--max-median-abs-error "$max_median")
[ $gain -eq 0 ] || bounds+=(--require-backfill-gain)
raw_bounds=()
[ -z "$raw_min_order" ] || raw_bounds+=(--min-order-agreement "$raw_min_order")

# One real replay and both comparisons; sets rc to the first failing comparison's exit code (called
# plainly, not in a condition, so set -e still stops on a cluster or replay error).
attempt() {
  "$repo/tests/slurm/cluster.sh" start --dir "$cluster_dir" --nodes 4 "${cluster_args[@]+"${cluster_args[@]}"}" >/dev/null
  started=$(date +%s)
  "$here/replay.sh" --workload "$workload" --out "$out" --bin "$bin" --dir "$cluster_dir"
  note "real replay took $(($(date +%s) - started)) s"
  # The configuration both sides use, and the controller's record, kept beside the results.
  cp "$cluster_dir/slurm.conf" "$out/slurm.conf"
  mkdir -p "$out/slurm-logs"
  cp "$cluster_dir"/log/*.log "$cluster_dir/jobcomp.txt" "$out/slurm-logs/" 2>/dev/null || true
  if [ $keep -eq 0 ]; then
    "$repo/tests/slurm/cluster.sh" stop --dir "$cluster_dir" >/dev/null
  fi

  "${compare[@]}" --json --details "$out/details.csv" >"$out/report.json" || true
  "${compare[@]}" "${turnaround[@]}" --json --details "$out/details-turnaround.csv" \
    >"$out/report-turnaround.json" || true
  set +e
  {
    echo "== 1. the simulator as it is: a job's nodes are free the instant it ends"
    "${compare[@]}" "${raw_bounds[@]+"${raw_bounds[@]}"}"
    rc1=$?
    echo
    echo "== 2. with Slurm's node turnaround added to every simulated runtime"
    "${compare[@]}" "${turnaround[@]}" "${bounds[@]+"${bounds[@]}"}"
    rc2=$?
    echo "$rc1 $rc2" >"$out/compare.rc"
  } | tee "$out/report.txt"
  set -e
  read -r rc1 rc2 <"$out/compare.rc"
  rc=$rc1
  [ "$rc" -ne 0 ] || rc=$rc2
}

# A loaded host can stall slurmctld for seconds (CI builds beside the suites), and a stall shifts
# every later real start. The short run's bounds are measured on the scheduling decisions, so a
# missed bound gets one more replay: a simulator that decides differently misses both.
attempt
if [ "$rc" -eq 3 ] && [ $short -eq 1 ] && [ $keep -eq 0 ]; then
  mkdir -p "$out/attempt-1"
  mv "$out"/report* "$out"/details*.csv "$out/real.csv" "$out/attempt-1/"
  note "bounds missed (first replay kept in $out/attempt-1); replaying once more, as a stalled controller shifts every later start"
  attempt
fi
note "results in $out (report.txt, report*.json, details*.csv, real.csv, workload.csv, slurm.conf)"
exit "$rc"
