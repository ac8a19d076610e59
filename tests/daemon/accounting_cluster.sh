# Sourced by the tests that need the local cluster with accounting (tests/slurm/cluster.sh
# --accounting: slurmdbd and MariaDB): reads `--bin MIRAGE [--dir DIR]`, exits 77 (skipped)
# without root or the packages, starts the cluster (stopped on exit) and writes a mirage config
# for it, $conf, in the empty folder $dir/out.
#   test=NAME; dir=DEFAULT_DIR; source accounting_cluster.sh "$@"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "$test: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -x "$bin" ] || { echo "$test: --bin must name the mirage binary" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"  # the tests run it from other folders
if [ "$(id -u)" -ne 0 ]; then echo "$test: SKIP (needs root)"; exit 77; fi
for b in slurmctld slurmd slurmdbd mariadbd sbatch sacct sacctmgr python3; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
    { echo "$test: SKIP ($b not installed)"; exit 77; }
done
fail() { echo "$test: FAIL: $*" >&2; exit 1; }
note() { echo "$test: $*"; }
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# Ports of its own, apart from the other test clusters.
export MIRAGE_SLURM_CTLD_PORT=18817 MIRAGE_SLURM_NODE_PORT=18901 MIRAGE_SLURM_DBD_PORT=18819
eval "$(bash "$root/tests/slurm/cluster.sh" start --nodes 2 --dir "$dir/cluster" --accounting | tail -n 1)"
trap 'bash "$root/tests/slurm/cluster.sh" stop --dir "$dir/cluster" >/dev/null 2>&1 || true' EXIT
rm -rf "$dir/out"
mkdir -p "$dir/out"
conf="$dir/out/mirage.toml"
cat >"$conf" <<CONF
[cluster]
backend = "slurm"
slurm_conf = "$SLURM_CONF"
partition = "gpu"
[store]
path = "$dir/out/store.db"
[socket]
path = "$dir/out/mirage.sock"
[log]
level = "warn"
CONF

# A pass, and campaign $id as `campaign show --json` prints it, on that config.
tick() { "$bin" tick --config "$conf" >>"$dir/out/tick.log" 2>&1 || fail "mirage tick failed: $(tail -n 5 "$dir/out/tick.log")"; }
show() { "$bin" campaign show "$id" --config "$conf" --json 2>/dev/null; }
job_of() { show | json_get "d['segment_list'][$1]['job_id'] if len(d['segment_list']) > $1 else 0"; }

# Campaign $1 of $2 segments of `sleep 3`, limit $3 minutes, each submitted as the last ends (no
# fallback chain), added from $dir/out; sets $id.
add_short_chain() {
  printf '[policy]\nfallback_chain = false\n' >>"$conf"
  printf '#!/bin/bash\nsleep 3\n' >"$dir/out/segment.sh"
  local added
  added="$(cd "$dir/out" && "$bin" campaign add --config "$conf" --name "$1" --script segment.sh \
    --segments "$2" --nodes 1 --time "$3" --no-export-env --json 2>"$dir/out/add.err")" ||
    fail "campaign add failed: $(cat "$dir/out/add.err")"
  id="$(echo "$added" | json_get 'd["id"]')"
}
