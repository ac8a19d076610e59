#!/usr/bin/env bash
# `mirage trace calibrate` goes through the calibration cache as the replays do: what it infers a
# later replay reads, what a replay inferred it writes without inferring again, and its file and
# lines are those of a run that infers, byte for byte.
#   trace_calibrate_shares_the_calibration_cache.sh MIRAGE DIR
set -euo pipefail
mirage="$1" dir="$2/calibrate-cache"
rm -rf "$dir" && mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/xdg"
entries="$XDG_CACHE_HOME/mirage/calibrations"
fail() { echo "$*"; exit 1; }
calibrate() { "$mirage" trace calibrate sample:gpu-cluster --out "$dir/$1.toml" >"$dir/$1.out" 2>"$dir/$1.err"; }
fidelity=(trace fidelity sample:gpu-cluster --what-if-nodes none --json)
# The same lines but the one naming the file written.
same_lines() { cmp -s <(tail -n +2 "$dir/$1.out") <(tail -n +2 "$dir/$2.out"); }

MIRAGE_CALIBRATION_CACHE=off calibrate inferring
calibrate first
grep -q "^mirage: calibration inferred from .*, saved to $entries/" "$dir/first.err" ||
  fail "the first calibrate does not say where it saved: $(cat "$dir/first.err")"
"$mirage" "${fidelity[@]}" >/dev/null 2>"$dir/fidelity-after.err"
grep -q "read from $entries/" "$dir/fidelity-after.err" ||
  fail "trace fidelity did not read what calibrate saved: $(cat "$dir/fidelity-after.err")"

rm -rf "$entries"
"$mirage" "${fidelity[@]}" >/dev/null 2>"$dir/fidelity-first.err"
grep -q "calibration inferred from" "$dir/fidelity-first.err" || fail "an emptied cache was read"
calibrate cached
grep -q "^mirage: calibration of .* read from $entries/" "$dir/cached.err" ||
  fail "calibrate did not read what trace fidelity saved: $(cat "$dir/cached.err")"
for run in first cached; do
  cmp -s "$dir/inferring.toml" "$dir/$run.toml" ||
    fail "the $run calibrate wrote another file: $(diff "$dir/inferring.toml" "$dir/$run.toml" | head)"
  same_lines inferring "$run" || fail "the $run calibrate printed other lines"
done
echo "ok: trace calibrate reads and writes the calibration cache"
