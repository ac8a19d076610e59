#!/usr/bin/env bash
# `campaign add` takes the same scripts through the daemon's socket and, with no daemon, on the
# store (simulator backend): one at Slurm's 4 MiB limit and one with a Latin-1 byte both ways, and
# one over it refused both ways with the same message. A policy file that is no model is refused
# without the learned agents' plugin (here out of reach: a load would fail naming it). An add
# without --policy takes the default the learned agents' verdict compiled in
# (daemon/config/default-policy.toml) and says so in one line, both ways; one run with
# SBATCH_PARTITION set names it as a variable sbatch runs without, both ways; --no-export-env
# puts --export=NONE among the campaign's sbatch flags, both ways.
#   campaign_add_with_and_without_a_daemon.sh MIRAGE_BIN DIR
set -euo pipefail
bin="$(realpath "$1")" dir="$2"
rm -rf "$dir" && mkdir -p "$dir"
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; cat "$dir"/daemon.log >&2 2>/dev/null || true; exit 1; }
export MIRAGE_LEARNED_PLUGIN="$dir/no-such-plugin.so"
verdict="$(dirname "$0")/../../daemon/config/default-policy.toml"
default="$(sed -n 's/^policy = "\(.*\)"$/\1/p' "$verdict")"
[ -n "$default" ] || fail "no policy line in $verdict"

for name in daemon store; do
  printf '[cluster]\nbackend = "simulator"\n[store]\npath = "%s/%s.db"\n[socket]\npath = "%s/%s.sock"\n[log]\nlevel = "warn"\n' \
    "$dir" "$name" "$dir" "$name" >"$dir/$name.toml"
done
script() {  # script FILE BYTES: a batch script of exactly BYTES bytes
  { printf '#!/bin/bash\n#SBATCH --nodes=1\n'; head -c "$(($2 - 31))" /dev/zero | tr '\0' '#'; printf '\n'; } >"$1"
  [ "$(stat -c %s "$1")" -eq "$2" ] || fail "$1 is not $2 bytes"
}
script "$dir/100k.sbatch" 100000
script "$dir/at-limit.sbatch" 4194304
script "$dir/over-limit.sbatch" 4194305
printf '#!/bin/bash\n# caf\351 (Latin-1)\nsrun x\n' >"$dir/latin1.sbatch"

add() {  # add WHERE... SCRIPT [FLAGS]: the output, then the exit status on the last line
  local where=("$1" "$2") file="$3"
  shift 3
  set +e
  (cd "$dir" && "$bin" campaign add --name "$(basename "$file")" --script "$file" --segments 1 \
    --time 1:00:00 --no-export-env "${where[@]}" "$@" 2>&1)
  echo "rc=$?"
  set -e
}

"$bin" daemon --config "$dir/daemon.toml" >"$dir/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
  "$bin" status --socket "$dir/daemon.sock" >/dev/null 2>&1 && break
  sleep 0.1
done
"$bin" status --socket "$dir/daemon.sock" >/dev/null || fail "the daemon did not come up"

refusals=()
for way in "--socket $dir/daemon.sock" "--config $dir/store.toml"; do
  read -r -a where <<<"$way"
  for f in 100k at-limit latin1; do
    out="$(add "${where[@]}" "$dir/$f.sbatch")"
    grep -q "^rc=0$" <<<"$out" || fail "$f.sbatch refused with ${where[0]}: $out"
    # --no-export-env (every add here but one) is sbatch's --export=NONE on its command line.
    id="$(sed -n "s/^campaign \([0-9]*\) '$f.sbatch' added.*/\1/p" <<<"$out")"
    "$bin" campaign show "$id" --json "${where[@]}" | grep -q '"--export=NONE"' ||
      fail "$f.sbatch added with --no-export-env, with ${where[0]}, is not submitted with --export=NONE"
    grep -q "note: policy $default (the default): learned agents earned their place (least cost, or on the frontier and cheaper than the baseline chosen the month before) on [0-9]* of [0-9]* chains in real waits (.*, so the default is .*: see docs/learned-agents.md" <<<"$out" ||
      fail "an add without --policy, with ${where[0]}, does not say it took $default and why: $out"
  done
  out="$(add "${where[@]}" "$dir/over-limit.sbatch")"
  grep -q "^rc=2$" <<<"$out" || fail "over-limit.sbatch not refused with ${where[0]}: $out"
  refusals+=("$(head -1 <<<"$out")")
  # The shell's sbatch input variables would override the script: add refuses, naming them (the
  # only add here that passes its environment).
  out="$(cd "$dir" && SBATCH_PARTITION=debug "$bin" campaign add --name sbatch-vars \
    --script "$dir/latin1.sbatch" --segments 1 --time 1:00:00 "${where[@]}" 2>&1)" &&
    fail "an add with SBATCH_PARTITION set, with ${where[0]}, was accepted: $out"
  grep -q "environment: SBATCH_PARTITION set; sbatch reads them over" <<<"$out" ||
    fail "an add with SBATCH_PARTITION set, with ${where[0]}, does not name it: $out"
  out="$(add "${where[@]}" "$dir/latin1.sbatch" --policy /etc/hostname)"
  grep -q "policy: /etc/hostname is not a mirage model file" <<<"$out" ||
    fail "a policy that is no model file, with ${where[0]}: $out"
done
[ "${refusals[0]}" = "${refusals[1]}" ] || fail "two refusals: '${refusals[0]}' and '${refusals[1]}'"
grep -q "over-limit.sbatch: the script is 4194305 bytes, over the limit of 4194304 bytes" \
  <<<"${refusals[0]}" || fail "the refusal does not name the file, its size and the limit: ${refusals[0]}"
echo "ok: 100 KB, 4 MiB and Latin-1 scripts added with and without the daemon; over 4 MiB refused alike; SBATCH_PARTITION named both ways; --no-export-env is --export=NONE"
