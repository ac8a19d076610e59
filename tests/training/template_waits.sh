#!/usr/bin/env bash
# What the segment template (training_jobs/sbatch/gpt-segment.sbatch) asks of the trainer, run
# outside Slurm with srun replaced by a stub that records the trainer's arguments: a later
# segment waits for its predecessor in either overlap mode (concurrent: for as long as the
# predecessor runs), the first segment does not, and a user's own --handoff-timeout stands.
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
STUB
chmod +x "$work/bin/srun"

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
a=$(trainer_args MIRAGE_SEGMENT=3)
expect "concurrent later segment waits" "$(waits "$a")" 1
expect "concurrent later segment's wait" "$(timeout_of "$a")" 2592000
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_HANDOFF=1)
expect "hand-off segment waits" "$(waits "$a")" 1
expect "hand-off segment's wait (the trainer's default)" "$(timeout_of "$a")" ""
a=$(trainer_args MIRAGE_SEGMENT=3 MIRAGE_TRAIN_ARGS="--handoff-timeout 60")
expect "a user's own wait" "$(timeout_of "$a")" 60
exit $failed
