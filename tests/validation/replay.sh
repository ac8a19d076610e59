#!/usr/bin/env bash
# The real side of the faithfulness validation: replays a workload CSV (validate_slurm cut) on the
# running cluster of tests/slurm/cluster.sh, submitting every job at its offset after a common t0,
# waits until all have ended, and writes what slurmctld recorded (jobcomp) as real.csv.
#
#   replay.sh --workload W.csv --out DIR --bin path/to/validate_slurm [--dir CLUSTER_DIR]
#
# Writes DIR/t0 (Unix seconds of offset 0), DIR/submit.log (planned vs actual submission) and
# DIR/real.csv. Every wait is bounded; on a stall it prints squeue and fails.
set -euo pipefail

die() {
  echo "replay.sh: error: $*" >&2
  exit 1
}
note() { echo "replay.sh: $*" >&2; }

workload="" out="" bin="" dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm}"
stall_limit="${MIRAGE_REPLAY_STALL_S:-90}"
while [ $# -gt 0 ]; do
  case "$1" in
    --workload) workload="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --bin) bin="${2:?}"; shift 2 ;;
    --dir) dir="${2:?}"; shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -f "$workload" ] || die "--workload: no such file '$workload'"
[ -n "$out" ] || die "--out is required"
[ -x "$bin" ] || die "--bin: '$bin' is not an executable validate_slurm"
export SLURM_CONF="$dir/slurm.conf"
[ -f "$SLURM_CONF" ] || die "no cluster in $dir (start it with tests/slurm/cluster.sh start)"
jobcomp="$(sed -n 's/^JobCompLoc=//p' "$SLURM_CONF" | tail -n1)"
[ -n "$jobcomp" ] || die "$SLURM_CONF sets no JobCompLoc: finished jobs would not be recorded"
mkdir -p "$out"
if [ -f "$jobcomp" ] && grep -qE ' Name=v[0-9]+ ' "$jobcomp"; then
  die "$jobcomp already holds jobs named v<id>: restart the cluster (cluster.sh start) first"
fi
timeout 10 sinfo -h >/dev/null 2>&1 || die "slurmctld does not answer (SLURM_CONF=$SLURM_CONF)"

ids=() offs=() nodes=() limits=() runs=()
while IFS=, read -r id off n lim run _rest; do
  case "$id" in '#'* | id | '') continue ;; esac
  ids+=("$id") offs+=("$off") nodes+=("$n") limits+=("$lim") runs+=("$run")
done <"$workload"
count=${#ids[@]}
[ "$count" -gt 0 ] || die "$workload has no jobs"
last_off=${offs[$((count - 1))]}
sum_run=0
for r in "${runs[@]}"; do sum_run=$((sum_run + r)); done

now_ns() { date +%s%N; }
# t0 on a whole second, two seconds ahead: slurmctld records whole seconds.
t0=$(($(date +%s) + 2))
echo "$t0" >"$out/t0"
note "replaying $count jobs over ${last_off}s from t0=$t0 ($(date -u -d "@$t0" +%FT%TZ))"

: >"$out/submit.log"
for ((i = 0; i < count; i++)); do
  target_ns=$(((t0 + offs[i]) * 1000000000))
  wait_ns=$((target_ns - $(now_ns)))
  if [ "$wait_ns" -gt 0 ]; then
    sleep "$(printf '%d.%09d' $((wait_ns / 1000000000)) $((wait_ns % 1000000000)))"
  fi
  minutes=$((limits[i] / 60))
  jobid=""
  for attempt in 1 2 3; do
    if jobid="$(sbatch --parsable --no-requeue -N "${nodes[i]}" --exclusive -t "$minutes" \
      -J "v${ids[i]}" -o /dev/null -e /dev/null --chdir=/tmp --wrap "sleep ${runs[i]}" 2>"$out/sbatch.err")"; then
      break
    fi
    note "sbatch for v${ids[i]} failed (attempt $attempt): $(cat "$out/sbatch.err")"
    jobid=""
    sleep 0.5
  done
  [ -n "$jobid" ] || die "could not submit v${ids[i]}"
  lag_ms=$((($(now_ns) - target_ns) / 1000000))
  echo "v${ids[i]} slurm=$jobid planned=${offs[i]} lag_ms=$lag_ms" >>"$out/submit.log"
done
note "all $count jobs submitted; waiting for them to end"

deadline=$((t0 + last_off + sum_run + 180))
last_done=-1 last_change=$(date +%s)
while :; do
  done_count="$(grep -cE ' Name=v[0-9]+ ' "$jobcomp" 2>/dev/null || true)"
  done_count=${done_count:-0}
  [ "$done_count" -ge "$count" ] && break
  now=$(date +%s)
  if [ "$done_count" -ne "$last_done" ]; then
    last_done=$done_count last_change=$now
  fi
  running="$(squeue -h -t R,CG 2>/dev/null | wc -l || true)"
  if [ "$running" -gt 0 ]; then last_change=$now; fi
  if [ $((now - last_change)) -ge "$stall_limit" ] || [ "$now" -ge "$deadline" ]; then
    squeue -o '%.8i %.8j %.3t %.6D %.10l %.10M %R' >&2 || true
    sinfo -N >&2 || true
    die "replay stalled: $done_count of $count jobs ended, none running for ${stall_limit}s (or past the deadline)"
  fi
  sleep 1
done
note "all $count jobs ended after $(($(date +%s) - t0))s"
"$bin" collect --workload "$workload" --jobcomp "$jobcomp" --t0 "$t0" --out "$out/real.csv"
