#!/usr/bin/env bash
# Each inferred part's null test on its own, on every shared trace: the calibration inferred with
# `--null-tests TESTS` (none: every part kept as the log shows it; all: the default), replayed over
# the whole log in sample and on the trace's evaluation month (bench/trace_windows.sh) in sample
# and forward (fitted on the months before it), with what it kept. Prints one table
# (docs/results/fidelity.md); asserts nothing.
#   bench/null_tests.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [TESTS ...]
# TESTS default: none room links rank feedback limits all. Set XDG_CACHE_HOME to a fresh folder to infer
# anew rather than read the calibration cache.
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
shift || true
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(none room links rank feedback limits all)

# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

echo "| log | --null-tests | whole log in sample: mean ratio, over 1 h sim vs real, rank | month in sample | month forward | kept |"
echo "|---|---|---|---|---|---|"
figures() {  # FIDELITY_JSON [in_sample]: "ratio, sim% vs real%, rank"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
f = d[sys.argv[2]]["overall"] if len(sys.argv) > 2 else d["overall"]
print("%.2f, %.0f%% vs %.0f%%, %.2f" % (f["mean_ratio"], 100 * f["sim_over_1h"], 100 * f["real_over_1h"], f["rank_correlation"]))
' "$@"
}
run_trace() {
  local label=$2 trace=$3 machine=${4%%--time*} train_from=$5 from=$6 to=$7 t whole=() kept
  # LS6's whole log is its four months before March 2023, as fidelity.md's table reads it.
  [ "$1" = ls6 ] && whole=(--from "$train_from" --to "$to")
  for t in "${tests[@]}"; do
    # shellcheck disable=SC2086 # $machine is a list of words
    "$mirage" trace fidelity "$trace" $machine --lenient --calibration infer --null-tests "$t" \
      "${whole[@]+"${whole[@]}"}" --what-if-nodes none --json 2>/dev/null >"$scratch/whole.json"
    # shellcheck disable=SC2086
    "$mirage" trace fidelity "$trace" $machine --lenient --null-tests "$t" --fit-until "$from" \
      --to "$to" --what-if-nodes none --json 2>/dev/null >"$scratch/month.json"
    # shellcheck disable=SC2086
    kept=$("$mirage" trace calibrate "$trace" $machine --lenient --null-tests "$t" \
      --out "$scratch/c.toml" 2>/dev/null | python3 -c '
import re, sys
out = sys.stdin.read()
parts = []
m = re.search(r"user limits\s+(\d+) running jobs, (\d+) nodes", out)
if m and m.groups() != ("0", "0"): parts.append("limits %s jobs, %s nodes per user" % m.groups())
m = re.search(r"capacity\s+(\d+) of (\d+) \w+ congested, ([\d.]+) nodes", out)
if m: parts.append("room %s of %s days, %s nodes" % m.groups())
m = re.search(r"dependencies\s+(\d+) jobs replayed as dependent on their user.s earlier job, (\d+) of them", out)
if m: parts.append("%s dependencies (%s in arrays)" % m.groups())
m = re.search(r"(\d+) of the log.s jobs outside arrays.*?(\d+),? (?:would )?by chance", out)
if m: parts.append("links %s vs %s by chance" % m.groups())
m = re.search(r"feedback\s+(\d+) jobs", out)
if m: parts.append("%s followers" % m.group(1))
m = re.search(r"priority\s+(.*)", out)
if m: parts.append(m.group(1).split(":")[0][:60])
print("; ".join(parts))
')
    echo "| $label | $t | $(figures "$scratch/whole.json") | $(figures "$scratch/month.json" in_sample) | $(figures "$scratch/month.json") | $kept |"
  done
}
for_each_trace "$which" run_trace
