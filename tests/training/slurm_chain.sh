#!/usr/bin/env bash
# A campaign of three chained segments of the tiny model through a real local Slurm cluster
# (tests/slurm/cluster.sh, 2 nodes), each segment the real sbatch template
# (training_jobs/sbatch/gpt-segment.sbatch) running 2 ranks over gloo (srun, TCP rendezvous):
#   1. segment 1: 15 steps (its step budget), exits 0;
#   2. segment 2 (--dependency=afterany:1): resumes, trains until it is told to stop;
#   3. segment 3, hand-off mode, submitted while segment 2 runs: it starts on the other node and
#      waits; then `scancel --signal=USR1 --batch <segment 2>` (what the mirage daemon does):
#      segment 2 checkpoints and exits 0, segment 3 resumes from its step and trains 15 steps.
# Checks: all three COMPLETED with exit 0; one loss curve: the steps run 1..N without a gap or
# repeat, each segment continues at the step the previous one stopped (no reset), and every
# step's loss equals that of one uninterrupted local run (tolerance 1e-6; it is exact in
# practice: same binary, same thread count, same two ranks).
#
#   tests/training/slurm_chain.sh --trainer PATH [--out DIR] [--keep-cluster]
#
# The cluster lives in $MIRAGE_SLURM_DIR (default /tmp/mirage-slurm-train) on ports 16917 (ctld)
# and 17101-17102 (nodes), beside the default test cluster's 16817/17001+.
# Exit: 0 passed, 1 failed, 77 skipped (not root or no Slurm packages).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
template="$repo/training_jobs/sbatch/gpt-segment.sbatch"
cluster_sh="$repo/tests/slurm/cluster.sh"

die() {
  echo "slurm_chain.sh: FAILED: $*" >&2
  exit 1
}
note() { echo "slurm_chain.sh: $*" >&2; }

trainer="" out="/tmp/mirage-train-chain" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --trainer) trainer="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --keep-cluster) keep=1; shift ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
[ -x "$trainer" ] || die "--trainer must name the mirage-train-gpt binary (got '$trainer')"

if [ "$(id -u)" -ne 0 ]; then
  note "skipped: needs root (SlurmUser=root, munged)"
  exit 77
fi
for b in slurmctld slurmd sbatch srun scancel munged; do
  if ! command -v "$b" >/dev/null; then
    note "skipped: '$b' not installed (scripts/install-deps.sh)"
    exit 77
  fi
done

cluster_dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm-train}"
cluster=("$cluster_sh")
cluster_args=(--dir "$cluster_dir")
start_args=(--nodes 2 --ctld-port "${MIRAGE_TRAIN_SLURM_CTLD_PORT:-16917}"
  --node-port "${MIRAGE_TRAIN_SLURM_NODE_PORT:-17101}")

rm -rf "$out"
mkdir -p "$out"
cleanup() {
  if [ $keep -eq 0 ]; then
    "${cluster[@]}" stop "${cluster_args[@]}" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
"${cluster[@]}" start "${cluster_args[@]}" "${start_args[@]}" >/dev/null
eval "$("${cluster[@]}" env "${cluster_args[@]}")"

ckpt="$out/ckpt"
flags="--seq-len 64 --batch 8 --threads 1 --log-every 1 --checkpoint-minutes 0"
export MIRAGE_TRAIN_GPT="$trainer" MIRAGE_CKPT_DIR="$ckpt" MIRAGE_MODEL=tiny MIRAGE_STEPS=1000
submit() {
  sbatch --parsable --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --gres=gpu:4 --time=5 \
    --output="$out/segment-%j.out" "$@" "$template"
}
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1" 2>/dev/null; }
# Waits up to $1 seconds for the command in $2.. to succeed.
wait_for() {
  local limit=$1 start=$SECONDS
  shift
  until "$@"; do
    [ $((SECONDS - start)) -lt "$limit" ] || return 1
    sleep 0.2
  done
}
step_at_least() { [ "$(field "$1" step)" ] && [ "$(field "$1" step)" -ge "$2" ]; }
state_is() { [ "$(field "$1" state)" = "$2" ]; }
queue_empty() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
show_outputs() {
  local f
  for f in "$out"/segment-*.out; do
    echo "---- $f" >&2
    tail -n 15 "$f" >&2 || true
  done
}
trap 'show_outputs; cleanup' ERR

t0=$SECONDS
j1=$(MIRAGE_TRAIN_ARGS="$flags --run-steps 15" submit)
j2=$(MIRAGE_TRAIN_ARGS="$flags" submit --dependency=afterany:"$j1")
note "segment 1 = job $j1, segment 2 = job $j2 (afterany:$j1)"
wait_for 180 step_at_least "$ckpt/progress-$j2.json" 25 || {
  show_outputs
  die "segment 2 (job $j2) did not reach step 25"
}
j3=$(MIRAGE_HANDOFF=1 MIRAGE_TRAIN_ARGS="$flags --run-steps 15 --handoff-timeout 120" submit)
note "segment 3 = job $j3 (hand-off mode), submitted while job $j2 trains"
wait_for 120 state_is "$ckpt/progress-$j3.json" waiting || {
  show_outputs
  die "segment 3 (job $j3) never started waiting for the hand-off"
}
state_is "$ckpt/progress-$j2.json" running || die "segment 2 (job $j2) stopped before the hand-off"
note "job $j3 waits; handing off: scancel --signal=USR1 --batch $j2"
scancel --signal=USR1 --batch "$j2"
wait_for 180 queue_empty "$j1,$j2,$j3" || {
  show_outputs
  die "jobs $j1,$j2,$j3 still queued after 180 s"
}
sleep 1  # jobcomp is written as the job record completes
note "three segments done in $((SECONDS - t0)) s"

# 1. Every segment completed with exit 0.
for j in "$j1" "$j2" "$j3"; do
  line="$(grep "JobId=$j " "$cluster_dir/jobcomp.txt" || true)"
  [[ "$line" == *"JobState=COMPLETED"* && "$line" == *"ExitCode=0:0"* ]] || {
    show_outputs
    die "job $j did not complete with exit 0: ${line:-no jobcomp record}"
  }
done
grep -q "hand-off received: job $j2 stopped at step" "$out/segment-$j3.out" ||
  die "segment 3 (job $j3) does not report the hand-off from job $j2"
[ "$(field "$ckpt/progress-$j2.json" reason)" = "SIGUSR1" ] ||
  die "segment 2 (job $j2) stopped for '$(field "$ckpt/progress-$j2.json" reason)', not SIGUSR1"

# 2. One curve: steps 1..N, segment by segment, no gap, no repeat, no reset.
metrics="$ckpt/metrics.jsonl"
awk -v j1="$j1" -v j2="$j2" -v j3="$j3" '
  {
    match($0, /"step":[0-9]+/); step = substr($0, RSTART + 7, RLENGTH - 7) + 0
    match($0, /"loss":[-0-9.eE+]+/); loss = substr($0, RSTART + 7, RLENGTH - 7) + 0
    match($0, /"job_id":"[^"]*"/); job = substr($0, RSTART + 10, RLENGTH - 11)
    if (step != NR) { printf "step %d at line %d: a gap or a repeat\n", step, NR; bad = 1 }
    if (NR == 1) first_loss = loss
    if (job != prev_job) {
      seg++
      want = seg == 1 ? j1 : seg == 2 ? j2 : j3
      if (job != want) { printf "segment %d is job %s, expected %s\n", seg, job, want; bad = 1 }
      if (seg > 1) {
        printf "boundary %d->%d at step %d: loss %.4f -> %.4f (first step: %.4f)\n",
               seg - 1, seg, step, prev_loss, loss, first_loss
        if (loss > first_loss - 1.0 || loss - prev_loss > 0.5) { print "loss reset"; bad = 1 }
      }
    }
    prev_job = job; prev_loss = loss
  }
  END {
    if (seg != 3) { printf "%d segments in the metrics, expected 3\n", seg; bad = 1 }
    printf "%d steps, final loss %.4f\n", NR, prev_loss
    exit bad
  }' "$metrics" >&2 || die "the metrics do not form one continuous curve ($metrics)"
total=$(wc -l <"$metrics")
"$trainer" --inspect "$ckpt/ckpt-$(printf %012d "$total").mgc" | grep -q "\"step\":$total" ||
  die "the final checkpoint of step $total does not load"

# 3. The same curve as one uninterrupted run (2 local ranks, file rendezvous).
ref="$out/reference"
mkdir -p "$ref"
pids=()
for r in 0 1; do
  # shellcheck disable=SC2086  # $flags is a list of flags
  env -u SLURM_CONF MIRAGE_RANK=$r MIRAGE_WORLD_SIZE=2 MIRAGE_RUN_ID=reference \
    "$trainer" --model tiny --steps 1000 --run-steps "$total" $flags \
    --checkpoint-dir "$ref/ckpt" --rendezvous "$ref/rdv" --metrics "$ref/metrics.jsonl" \
    >"$ref/rank$r.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "the reference run failed (see $ref)"; done
paste -d' ' <(sed 's/.*"loss":\([-0-9.eE+]*\).*/\1/' "$metrics") \
  <(sed 's/.*"loss":\([-0-9.eE+]*\).*/\1/' "$ref/metrics.jsonl") |
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d; n++ }
       END { printf "max |loss difference| against one uninterrupted run: %g over %d steps\n", worst, n
             exit (worst > 1e-6) }' >&2 ||
  die "the chained curve differs from the uninterrupted run"
note "PASSED"
