#!/usr/bin/env bash
# The calibration cache: a run that reads the cached calibration prints what a run that infers it
# prints (eval's and trace fidelity's JSON, wall times aside; trace calibrate's file and lines); the
# first run says where it saved it and a later one that it read it; trace calibrate and the replays
# read what each other saved; another machine size is another entry; a tampered entry is inferred
# again.
#   calibration_cache_replays_as_inferred.sh MIRAGE DIR
set -euo pipefail
mirage="$1" dir="$2/calibration-cache"
rm -rf "$dir" && mkdir -p "$dir"
export XDG_CACHE_HOME="$dir/xdg"
entries="$XDG_CACHE_HOME/mirage/calibrations"
fail() { echo "$*"; exit 1; }
no_walls() { grep -v '"wall_seconds"\|"replay_wall_s"' "$1"; }
eval_args=(eval --from 2024-03-06 --to 2024-03-07 --every 12h --policies reactive,average --json)
fidelity_args=(trace fidelity sample:gpu-cluster --what-if-nodes 1 --json)
for cmd in eval fidelity; do
  if [ $cmd = eval ]; then args=("${eval_args[@]}"); else args=("${fidelity_args[@]}"); fi
  MIRAGE_CALIBRATION_CACHE=off "$mirage" "${args[@]}" >"$dir/$cmd-inferring.json" 2>"$dir/$cmd-off.err"
  grep -q "not cached: MIRAGE_CALIBRATION_CACHE=off" "$dir/$cmd-off.err" ||
    fail "$cmd with the cache off: $(cat "$dir/$cmd-off.err")"
  "$mirage" "${args[@]}" >"$dir/$cmd-first.json" 2>"$dir/$cmd-first.err"
  "$mirage" "${args[@]}" >"$dir/$cmd-cached.json" 2>"$dir/$cmd-cached.err"
  for run in first cached; do
    cmp -s <(no_walls "$dir/$cmd-inferring.json") <(no_walls "$dir/$cmd-$run.json") ||
      fail "$cmd: the $run run differs from the inferring one: $(diff "$dir/$cmd-inferring.json" "$dir/$cmd-$run.json" | head)"
  done
done
grep -q "^mirage: calibration inferred from .*, saved to $entries/" "$dir/eval-first.err" ||
  fail "the first run does not say where it saved: $(cat "$dir/eval-first.err")"
grep -q "^mirage: calibration of .* read from $entries/" "$dir/eval-cached.err" ||
  fail "the second run does not say it read the cache: $(cat "$dir/eval-cached.err")"
before="$(ls "$entries" | wc -l)"
"$mirage" "${eval_args[@]}" --cluster-nodes 40 >/dev/null 2>"$dir/bigger.err"
grep -q "calibration inferred from" "$dir/bigger.err" || fail "40 nodes read 32's entry"
[ "$(ls "$entries" | wc -l)" -eq $((before + 1)) ] || fail "another machine size is not another entry: $(ls "$entries")"
# A byte of every entry flipped: inferred again, and the same figures.
for f in "$entries"/*; do
  printf 'X' | dd of="$f" bs=1 seek=200 conv=notrunc status=none
done
"$mirage" "${eval_args[@]}" >"$dir/eval-tampered.json" 2>"$dir/eval-tampered.err"
grep -q "calibration inferred from" "$dir/eval-tampered.err" ||
  fail "a tampered entry was trusted: $(cat "$dir/eval-tampered.err")"
cmp -s <(no_walls "$dir/eval-inferring.json") <(no_walls "$dir/eval-tampered.json") ||
  fail "the run after tampering differs"
"$mirage" "${eval_args[@]}" >/dev/null 2>"$dir/eval-rewritten.err"
grep -q "read from" "$dir/eval-rewritten.err" || fail "the tampered entry was not rewritten"

# trace calibrate: what it saves a replay reads, what a replay saved it reads, and it writes the
# file and prints the lines (but the one naming the file) of a run that infers.
calibrate() { "$mirage" trace calibrate sample:gpu-cluster --out "$dir/$1.toml" >"$dir/$1.out" 2>"$dir/$1.err"; }
fidelity_once() { "$mirage" trace fidelity sample:gpu-cluster --what-if-nodes none --json >/dev/null 2>"$dir/$1.err"; }
rm -rf "$entries"
MIRAGE_CALIBRATION_CACHE=off calibrate calibrate-inferring
calibrate calibrate-first
grep -q "^mirage: calibration inferred from .*, saved to $entries/" "$dir/calibrate-first.err" ||
  fail "the first calibrate does not say where it saved: $(cat "$dir/calibrate-first.err")"
fidelity_once fidelity-after-calibrate
grep -q "read from $entries/" "$dir/fidelity-after-calibrate.err" ||
  fail "trace fidelity did not read what calibrate saved: $(cat "$dir/fidelity-after-calibrate.err")"
rm -rf "$entries"
fidelity_once fidelity-before-calibrate
calibrate calibrate-cached
grep -q "^mirage: calibration of .* read from $entries/" "$dir/calibrate-cached.err" ||
  fail "calibrate did not read what trace fidelity saved: $(cat "$dir/calibrate-cached.err")"
for run in first cached; do
  cmp -s "$dir/calibrate-inferring.toml" "$dir/calibrate-$run.toml" ||
    fail "the $run calibrate wrote another file: $(diff "$dir/calibrate-inferring.toml" "$dir/calibrate-$run.toml" | head)"
  cmp -s <(tail -n +2 "$dir/calibrate-inferring.out") <(tail -n +2 "$dir/calibrate-$run.out") ||
    fail "the $run calibrate printed other lines"
done
echo "ok: cached runs print what inferring runs print"
