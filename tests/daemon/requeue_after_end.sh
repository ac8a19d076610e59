#!/usr/bin/env bash
# `scontrol requeue` of a segment's job that already COMPLETED puts the same id back in the queue
# (Slurm 22.05 takes a finished batch job); the next `mirage tick` cancels it instead of letting it
# run the segment a second time beside its successor. On the local cluster with accounting
# (tests/slurm/cluster.sh --accounting).
#
#   tests/daemon/requeue_after_end.sh --bin build/cli/mirage [--dir DIR]
# Needs root and the Slurm and MariaDB packages; exits 77 (skipped) without them.
set -euo pipefail
test=requeue_after_end
dir="${MIRAGE_REQUEUE_AFTER_END_IT_DIR:-/tmp/mirage-requeue-after-end-it}"
source "$(dirname "$0")/accounting_cluster.sh"
out="$dir/out"
state_of() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

add_short_chain requeued 2 5  # a limit far from the 3 s it runs: no fallback submission
tick
first="$(job_of 0)"
[ "$first" -gt 0 ] || fail "segment 0 was not submitted"
deadline=$((SECONDS + 60))
until [ "$(show | json_get 'd["segment_list"][0]["state"]')" = done ]; do  # seen COMPLETED
  [ $SECONDS -lt $deadline ] || fail "segment 0 did not end"
  sleep 1
  tick
done
[ "$(state_of "$first")" = COMPLETED ] || fail "job $first is $(state_of "$first"), not COMPLETED"
scontrol requeue "$first" || fail "scontrol requeue $first was refused"
note "job $first of segment 0 requeued after it completed: $(state_of "$first")"
tick
state="$(state_of "$first")"
[ "$state" = CANCELLED ] || fail "the requeued job $first is $state, not cancelled"
segment="$(show | json_get 'd["segment_list"][0]["state"]')"
[ "$segment" = done ] || fail "segment 0 is $segment after the requeue, not done"
grep -q "was requeued after it ended" "$out/tick.log" || fail "the tick did not say why it cancelled"
note "the tick cancelled job $first; segment 0 stays done"
note "PASS"
