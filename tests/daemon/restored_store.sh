#!/usr/bin/env bash
# A store restored from a copy taken before segment 1 was submitted, after segment 1 ran and ended
# (slurmctld has forgotten it: MinJobAge=2), on the local cluster with accounting
# (tests/slurm/cluster.sh --accounting): `mirage tick` finds that run in slurmdbd's records through
# sacct (this cluster keeps no job comment: by its name), adopts it and goes on to segment 2;
# segment 1 is never submitted a second time.
#
#   tests/daemon/restored_store.sh --bin build/cli/mirage [--dir DIR]
# Needs root and the Slurm and MariaDB packages; exits 77 (skipped) without them.
set -euo pipefail
test=restored_store
dir="${MIRAGE_RESTORED_STORE_IT_DIR:-/tmp/mirage-restored-store-it}"
source "$(dirname "$0")/accounting_cluster.sh"
out="$dir/out"
# Until accounting records job $1 as ended and slurmctld no longer lists it.
wait_forgotten() {
  local deadline=$((SECONDS + 60))
  until [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] &&
    sacct -X -n -P -j "$1" -o State | grep -q COMPLETED; do
    [ $SECONDS -lt $deadline ] || fail "job $1 did not end and leave the queue"
    sleep 1
  done
}

add_short_chain restored 3 1
tick
first="$(job_of 0)"
[ "$first" -gt 0 ] || fail "segment 0 was not submitted"
cp "$out/store.db" "$out/store.backup"  # before segment 1 is submitted
deadline=$((SECONDS + 60))
until [ "$(job_of 1)" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || fail "segment 1 was not submitted"
  sleep 1
  tick
done
second="$(job_of 1)"
wait_forgotten "$second"  # ended, with no tick that saw it
name1="$(sacct -X -n -P -j "$second" -o JobName | head -n1)"
case "$name1" in restored-s1-????????) ;; *) fail "segment 1's job is named '$name1', not restored-s1-<store id>" ;; esac
note "segment 1 ran as job $second after the copy; the store is restored from it"
rm -f "$out/store.db-wal" "$out/store.db-shm"
cp "$out/store.backup" "$out/store.db"
deadline=$((SECONDS + 60))
until [ "$(job_of 2)" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || { show >&2; fail "segment 2 was not submitted after the restore"; }
  sleep 1
  tick
done
third="$(job_of 2)"
# Segment 1's jobs, queued or running (slurmctld) and ended (accounting, which lags a few seconds).
runs="$({ squeue -h -n "$name1" -o %i; sacct -X -n -P -S now-1hour --name="$name1" -o JobIDRaw; } | sort -u)"
[ "$(echo "$runs" | wc -l)" -eq 1 ] || fail "segment 1 ran as jobs $(echo $runs)"
[ "$(job_of 1)" = "$second" ] || fail "segment 1 is job $(job_of 1), not the run $second"
reason="$(show | json_get '[s["reason"] for s in d["submissions"] if s["segment"] == 1][-1]')"
case "$reason" in *"ran while the store did not know it"*) ;; *) fail "segment 1's history: $reason" ;; esac
note "segment 1 adopted from accounting (job $second), segment 2 submitted as job $third"
note "PASS"
