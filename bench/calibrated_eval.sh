#!/usr/bin/env bash
# The baselines' whole-chain figures on every shared trace, forward and in both worlds
# (docs/results/calibrated-eval.md): on the evaluation month of bench/trace_windows.sh for each
# trace, 1-node and 8-node chains of two 48-hour segments (Theta: 128 nodes, 24 h), each beside
# the world of the log's real waits (--successor-wait both), the verdict chosen on the 28 days of
# samples before the month (--pick-before 28d). The replay is calibrated on the month it judges
# (`infer`, in sample: the world the daemon would have seen live) and on the months before it
# only (`forward`, --fit-until the month's first day); `none` adds the uncalibrated replay.
# Prints `mirage eval`'s tables; asserts nothing.
#   bench/calibrated_eval.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [POLICIES] [CALIBRATIONS]
# (default: all, reactive,average,forecast,oracle, "infer forward")
# MIRAGE_CLUSTER_FLAGS adds eval flags to every run (e.g. "--logged-window 7d").
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
policies="${2:-reactive,average,forecast,oracle}"
calibrations="${3:-infer forward}"

# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

# See for_each_trace: the evaluation month.
run_trace() {
  local name=$1 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  for chain in $sizes; do
    for calibration in $calibrations; do
      local flags="--calibration $calibration"
      [ "$calibration" != forward ] || flags="--fit-until $from"
      echo "== $name, $chain-node chains, $from .. $to, $flags"
      # shellcheck disable=SC2086 # $machine and $flags are lists of words
      /usr/bin/time -f "eval wall %e s" "$mirage" eval --trace "$trace" $machine --lenient \
        --nodes "$chain" --from "$from" --to "$to" --policies "$policies" \
        $flags --successor-wait both --pick-before 28d ${MIRAGE_CLUSTER_FLAGS:-} 2>&1 |
        tr '\r' '\n' | grep -v -E '^eval \(|^eval: '
    done
  done
}

for_each_trace "$which" run_trace
