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
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin=""
dir="${MIRAGE_RESTORED_STORE_IT_DIR:-/tmp/mirage-restored-store-it}"
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "restored_store: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -x "$bin" ] || { echo "restored_store: --bin must name the mirage binary" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then echo "restored_store: SKIP (needs root)"; exit 77; fi
for b in slurmctld slurmd slurmdbd mariadbd sbatch sacct python3; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
    { echo "restored_store: SKIP ($b not installed)"; exit 77; }
done
fail() { echo "restored_store: FAIL: $*" >&2; exit 1; }
note() { echo "restored_store: $*"; }

export MIRAGE_SLURM_CTLD_PORT=18817 MIRAGE_SLURM_NODE_PORT=18901 MIRAGE_SLURM_DBD_PORT=18819
eval "$(bash "$root/tests/slurm/cluster.sh" start --nodes 2 --dir "$dir/cluster" --accounting | tail -n 1)"
trap 'bash "$root/tests/slurm/cluster.sh" stop --dir "$dir/cluster" >/dev/null 2>&1 || true' EXIT
rm -rf "$dir/out"
mkdir -p "$dir/out"
out="$dir/out"
conf="$out/mirage.toml"
cat >"$conf" <<CONF
[cluster]
backend = "slurm"
slurm_conf = "$SLURM_CONF"
partition = "gpu"
[store]
path = "$out/store.db"
[socket]
path = "$out/mirage.sock"
[log]
level = "info"
[policy]
fallback_chain = false
CONF
printf '#!/bin/bash\nsleep 3\n' >"$out/segment.sh"
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
tick() { "$bin" tick --config "$conf" >>"$out/tick.log" 2>&1 || fail "mirage tick failed: $(tail -n 5 "$out/tick.log")"; }
show() { "$bin" campaign show "$id" --config "$conf" --json 2>/dev/null; }
job_of() { show | json_get "d['segment_list'][$1]['job_id'] if len(d['segment_list']) > $1 else 0"; }
# Until accounting records job $1 as ended and slurmctld no longer lists it.
wait_forgotten() {
  local deadline=$((SECONDS + 60))
  until [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] &&
    sacct -X -n -P -j "$1" -o State | grep -q COMPLETED; do
    [ $SECONDS -lt $deadline ] || fail "job $1 did not end and leave the queue"
    sleep 1
  done
}

id="$(cd "$out" && "$bin" campaign add --config "$conf" --name restored --script segment.sh \
  --segments 3 --nodes 1 --time 1 --no-export-env --json 2>/dev/null | json_get 'd["id"]')"
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
note "segment 1 ran as job $second after the copy; the store is restored from it"
rm -f "$out/store.db-wal" "$out/store.db-shm"
cp "$out/store.backup" "$out/store.db"
deadline=$((SECONDS + 60))
until [ "$(job_of 2)" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || { show >&2; fail "segment 2 was not submitted after the restore"; }
  sleep 1
  tick
done
runs="$(sacct -X -n -P -S now-1hour --name=restored-s1 -o JobIDRaw | wc -l)"
[ "$runs" -eq 1 ] || fail "segment 1 ran $runs times: $(sacct -X -n -P -S now-1hour --name=restored-s1 -o JobIDRaw,State | tr '\n' ' ')"
[ "$(job_of 1)" = "$second" ] || fail "segment 1 is job $(job_of 1), not the run $second"
reason="$(show | json_get '[s["reason"] for s in d["submissions"] if s["segment"] == 1][-1]')"
case "$reason" in *"ran while the store did not know it"*) ;; *) fail "segment 1's history: $reason" ;; esac
note "segment 1 adopted from accounting (job $second), segment 2 submitted as job $(job_of 2)"
note "PASS"
