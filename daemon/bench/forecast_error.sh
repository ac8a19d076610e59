#!/usr/bin/env bash
# How close does each predictor come to the start a job really gets, on a real Slurm with fair
# share? On the local cluster with accounting (tests/slurm/cluster.sh --accounting: slurmdbd and
# MariaDB, accounts `big` with 70 shares and `small` with 30, PriorityWeightFairshare=10000), four
# nodes, a half-hour multi-account load of 1- and 2-node sleep jobs, and probe jobs at random
# moments: mirage's forecast by the priorities slurmctld reports, the same forecast with every
# priority recomputed from age and size (what it did before), Slurm's own estimate (`sbatch
# --test-only`) and the simulator replaying the same submissions. Prints the median start error of
# each (docs/results/forecast-error.md); asserts nothing. 50 to 80 minutes.
#
#   daemon/bench/forecast_error.sh [--dir DIR]   (root; scripts/install-deps.sh and a build first)
# MIRAGE_FORECAST_MINUTES (default 30) and MIRAGE_FORECAST_SEED (default 7) size and seed the load.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
mirage="${MIRAGE:-$root/build/cli/mirage}"
dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-forecast-error}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    *) echo "usage: $0 [--dir DIR]" >&2; exit 2 ;;
  esac
done
# Fair share that moves within the half hour: usage halves every 15 minutes; age counts over 20.
eval "$(bash tests/slurm/cluster.sh start --nodes 4 --dir "$dir" --accounting \
  --conf PriorityDecayHalfLife=15 --conf PriorityMaxAge=20 | tail -n 1)"
trap 'bash tests/slurm/cluster.sh stop --dir "$dir" >/dev/null 2>&1 || true' EXIT
work="$dir/out"
mkdir -p "$work"
cat >"$work/mirage.toml" <<CONF
[cluster]
backend = "slurm"
slurm_conf = "$SLURM_CONF"
partition = "gpu"
[store]
path = "$work/store.db"
[socket]
path = "$work/mirage.sock"
[log]
level = "warn"
CONF
cd "$work"
python3 "$root/daemon/bench/forecast_error.py" "$mirage" "$work/mirage.toml" "$work"
