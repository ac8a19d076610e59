#!/usr/bin/env bash
# The user's limits reach the forecast from slurmctld's association manager, on the local cluster
# with accounting (tests/slurm/cluster.sh --accounting: slurmdbd and MariaDB, the QOS `capped`
# lets a user run one node): with root's default QOS set to `capped`, `mirage forecast` knows the
# one-node limit and where it came from, and a job pending behind the user's running one for
# that limit (QOSMaxNodePerUserLimit) is forecast as held, to start no earlier than the running
# job's end.
#
#   tests/daemon/accounting_limits.sh --bin build/cli/mirage [--dir DIR]
# Needs root and the Slurm and MariaDB packages; exits 77 (skipped) without them.
set -euo pipefail
test=accounting_limits
dir="${MIRAGE_ACCOUNTING_IT_DIR:-/tmp/mirage-accounting-it}"
source "$(dirname "$0")/accounting_cluster.sh"

sacctmgr -i -Q modify user root set defaultqos=capped >/dev/null
# slurmctld learns of the change from slurmdbd: wait for the association manager to show it.
deadline=$((SECONDS + 30))
# (No job 999999: the forecast exits 1 and still says what it knew of the partition.)
until limits="$({ "$bin" forecast --config "$conf" --job 999999 --json || true; } |
  json_get '"%s nodes (%s)" % (d[0]["cluster"]["max_running_nodes_per_user"], d[0]["cluster"]["limits_note"])')" &&
  [ "${limits%% *}" = 1 ]; do
  [ $SECONDS -lt $deadline ] || fail "the one-node limit of root's default QOS did not reach the forecast: $limits"
  sleep 1
done
note "limits: $limits"
# A campaign's own --qos is planned with that QOS's limits: `normal` sets none.
normal="$({ "$bin" forecast --config "$conf" --job 999999 --json || true; } |
  json_get 'd[0]["cluster"]["limits_by_qos"]["normal"]["max_running_nodes_per_user"]')"
[ "$normal" = 0 ] || fail "the limits under QOS normal should be none, got '$normal'"
note "limits under QOS normal: none"

running="$(sbatch --parsable -N 1 -t 3 -o /dev/null --wrap 'sleep 120')"
deadline=$((SECONDS + 30))
until [ "$(squeue -h -j "$running" -o %T)" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || fail "job $running did not start"
  sleep 1
done
limited="$(sbatch --parsable -N 1 -t 2 -o /dev/null --wrap 'sleep 1')"
deadline=$((SECONDS + 30))
until [ "$(squeue -h -j "$limited" -o %r)" = QOSMaxNodePerUserLimit ]; do
  [ $SECONDS -lt $deadline ] || fail "job $limited is not pending for the limit: $(squeue -h -j "$limited" -o %r)"
  sleep 1
done
forecast="$("$bin" forecast --config "$conf" --job "$limited" --json)"
held="$(echo "$forecast" | json_get 'd[0]["held_by_limit"]')"
start="$(echo "$forecast" | json_get 'd[0]["reported_start"] or 0')"
end="$(date -d "$(squeue -h -j "$running" -o %e)" +%s)"
[ "$held" = True ] || fail "job $limited, pending for QOSMaxNodePerUserLimit, was not forecast as held: $forecast"
[ "$start" -ge "$((end - 60))" ] ||
  fail "job $limited was forecast to start at $start, before the running job's end $end"
note "a job over the user's node limit is forecast as held, to start at $start (the running job ends $end)"
scancel "$running" "$limited"
note "PASS"
