#!/usr/bin/env bash
# What the segment template (training_jobs/sbatch/gpt-segment.sbatch) asks of the trainer, run
# outside Slurm with srun replaced by a stub that records the trainer's arguments: a later
# segment waits for its predecessor in either overlap mode (concurrent: as long as squeue says
# the job holding the directory has left, the trainer's default where it lists none or the lock
# names this very job), the first
# segment does not, a hand-off segment waits as long as the daemon says (MIRAGE_HANDOFF_WAIT),
# and a user's own --handoff-timeout stands; the trainer's step gets the job's whole environment
# and the job's own rendezvous.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
template="$here/../../training_jobs/sbatch/gpt-segment.sbatch"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/srun" <<'STUB'
#!/bin/sh
shift 2 # --kill-on-bad-exit=1 and the trainer
printf '%s\n' "$@" >"$ARGS_OUT"
echo "${SLURM_EXPORT_ENV:-}" >"$ARGS_OUT.export"
echo "${MASTER_ADDR:-} ${MASTER_PORT:-} ${MIRAGE_RANK-unset} ${MIRAGE_WORLD_SIZE-unset}" \
  "${MIRAGE_LOCAL_RANK-unset} ${MIRAGE_RUN_ID-unset}" >"$ARGS_OUT.rendezvous"
STUB
# squeue -h -j JOB -t RUNNING -o %L: the holder's time left, as SQUEUE_LEFT says (none if unset).
cat >"$work/bin/squeue" <<'STUB'
#!/bin/sh
[ -n "${SQUEUE_LEFT:-}" ] && echo "$SQUEUE_LEFT"
exit 0
STUB
chmod +x "$work/bin/srun" "$work/bin/squeue"
mkdir -p "$work/ckpt"
echo "pid 123 host node1 job 41" >"$work/ckpt/trainer.lock"

failed=0
# Runs the template with the given environment; prints the trainer's arguments, one a line.
trainer_args() {
  env -i PATH="$work/bin:$PATH" HOME="$work" SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=1 SLURM_NTASKS=1 \
    MIRAGE_CKPT_DIR="$work/ckpt" ARGS_OUT="$work/args" "$@" bash "$template" >/dev/null
  cat "$work/args"
}
expect() {
  local what=$1 got=$2 want=$3
  if [ "$got" != "$want" ]; then
    echo "template_waits.sh: FAILED: $what: got '$got', want '$want'" >&2
    failed=1
  fi
}
waits() { grep -c -- '^--handoff-wait$' <<<"$1" || true; }
timeout_of() { grep -A1 -- '^--handoff-timeout$' <<<"$1" | tail -n +2 | tr '\n' ' ' | sed 's/ $//'; }

a=$(trainer_args MIRAGE_SEGMENT=0)
expect "first segment waits" "$(waits "$a")" 0
a=$(trainer_args MIRAGE_SEGMENT=3 SQUEUE_LEFT=1-02:03:04)
expect "concurrent later segment waits" "$(waits "$a")" 1
expect "concurrent wait, the holder's time left and 10 minutes" "$(timeout_of "$a")" 94384
a=$(trainer_args MIRAGE_SEGMENT=3 SQUEUE_LEFT=08:09)
expect "concurrent wait, minutes and seconds left" "$(timeout_of "$a")" 1089
a=$(trainer_args MIRAGE_SEGMENT=3 SQUEUE_LEFT=UNLIMITED)
expect "concurrent wait, a holder without a limit" "$(timeout_of "$a")" 2592600
a=$(trainer_args MIRAGE_SEGMENT=3)
expect "concurrent segment whose lock's job Slurm no longer lists waits" "$(waits "$a")" 1
expect "... for the trainer's default only" "$(timeout_of "$a")" ""
# A requeued job (the same id) finding the lock of its own earlier incarnation: that job is this
# one, so its time left is no predecessor's to wait out.
echo "pid 99 host node2 job 7" >"$work/ckpt/trainer.lock"
a=$(trainer_args MIRAGE_SEGMENT=3 SQUEUE_LEFT=03:50:00)
expect "a requeued segment finding its own stale lock waits" "$(waits "$a")" 1
expect "... for the trainer's default only, not its own time left" "$(timeout_of "$a")" ""
echo "pid 123 host node1 job 41" >"$work/ckpt/trainer.lock"
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_HANDOFF=1)
expect "hand-off segment waits" "$(waits "$a")" 1
expect "hand-off segment's wait (the trainer's default)" "$(timeout_of "$a")" ""
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_HANDOFF=1 MIRAGE_HANDOFF_WAIT=1500)
expect "hand-off segment's wait, as long as the daemon may take to signal and cancel" "$(timeout_of "$a")" 1500
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_TRAIN_ARGS="--handoff-timeout 60")
expect "a user's own wait" "$(timeout_of "$a")" 60
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_HANDOFF=1 MIRAGE_HANDOFF_WAIT=1500 MIRAGE_TRAIN_ARGS="--handoff-timeout 60")
expect "a user's own wait over the daemon's" "$(timeout_of "$a")" 60
# sbatch --export=NONE (campaign add --no-export-env) leaves SLURM_EXPORT_ENV for srun to read as
# its own --export: the trainer's step must get the job's whole environment all the same.
trainer_args SLURM_EXPORT_ENV=MIRAGE_CAMPAIGN_ID,MIRAGE_SEGMENT >/dev/null
expect "the trainer's step gets the job's whole environment" "$(cat "$work/args.export")" ALL
# The rendezvous is this job's own: MASTER_ADDR/PORT and the trainer's rank overrides inherited
# from the shell that added the campaign (another job's, a test's) are not used; only
# MIRAGE_MASTER_ADDR/PORT override.
trainer_args MASTER_ADDR=stale.node MASTER_PORT=1234 MIRAGE_RANK=0 MIRAGE_WORLD_SIZE=1 \
  MIRAGE_LOCAL_RANK=0 MIRAGE_RUN_ID=old >/dev/null
expect "an inherited rendezvous is replaced by the job's" "$(cat "$work/args.rendezvous")" \
  "$(hostname) 29507 unset unset unset unset"
trainer_args MASTER_ADDR=stale.node MIRAGE_MASTER_ADDR=10.0.0.9 MIRAGE_MASTER_PORT=4000 >/dev/null
expect "MIRAGE_MASTER_ADDR/PORT override" "$(cat "$work/args.rendezvous")" \
  "10.0.0.9 4000 unset unset unset unset"
exit $failed
