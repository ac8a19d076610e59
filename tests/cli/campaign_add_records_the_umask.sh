#!/usr/bin/env bash
# `campaign add` records the shell's umask as SLURM_UMASK (as sbatch writes it) where the shell
# sets none: sbatch passes its caller's umask to the job, and the daemon's and the tick's is 0077,
# so without it every segment's checkpoints and logs would be unreadable to the user's group. A
# shell's own SLURM_UMASK is kept as it is; --no-export-env keeps the umask alone, as sbatch's
# --export=NONE still passes it. Read back from the store (no daemon, simulator backend).
#   campaign_add_records_the_umask.sh MIRAGE_BIN DIR
set -euo pipefail
bin="$(realpath "$1")" dir="$2"
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }
printf '[cluster]\nbackend = "simulator"\n[store]\npath = "%s/store.db"\n[socket]\npath = "%s/none.sock"\n[log]\nlevel = "warn"\n' \
  "$dir" "$dir" >"$dir/store.toml"
printf '#!/bin/bash\n#SBATCH --nodes=1\nsrun train\n' >"$dir/train.sbatch"
add() {  # add NAME [FLAGS]: adds a campaign on the store
  local name="$1"
  shift
  (cd "$dir" && "$bin" campaign add --name "$name" --script "$dir/train.sbatch" --segments 1 \
    --time 1:00:00 --config "$dir/store.toml" "$@" >/dev/null 2>&1) || fail "campaign add $name failed"
}
environment_of() {  # the stored environment of campaign NAME, one entry a line
  python3 -c 'import json, sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT environment FROM campaigns WHERE name = ?", (sys.argv[2],)).fetchone()
print("\n".join(json.loads(row[0])))' "$dir/store.db" "$1"
}
unset SLURM_UMASK
(umask 022 && add u022)
(umask 027 && add u027)
(umask 022 && export SLURM_UMASK=0002 && add own)
(umask 022 && add bare --no-export-env)
[ "$(environment_of u022 | grep -c '^SLURM_UMASK=')" = 1 ] || fail "u022: $(environment_of u022 | grep UMASK)"
environment_of u022 | grep -qx 'SLURM_UMASK=0022' || fail "an add under umask 022 did not store SLURM_UMASK=0022"
environment_of u027 | grep -qx 'SLURM_UMASK=0027' || fail "an add under umask 027 did not store SLURM_UMASK=0027"
[ "$(environment_of own | grep '^SLURM_UMASK=')" = SLURM_UMASK=0002 ] ||
  fail "the shell's own SLURM_UMASK=0002 was not kept: $(environment_of own | grep UMASK)"
[ "$(environment_of bare)" = SLURM_UMASK=0022 ] ||
  fail "--no-export-env stored '$(environment_of bare)', not SLURM_UMASK=0022 alone"
echo "ok"
