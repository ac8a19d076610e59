#!/usr/bin/env bash
# The baselines' whole-chain figures on every shared trace, on the uncalibrated replay and on the
# calibrated one (docs/results/calibrated-eval.md): the evaluation month of bench/learned_agents.sh
# for each trace, 1-node and 8-node chains of two 48-hour segments. Prints `mirage eval`'s tables;
# asserts nothing.
#   bench/calibrated_eval.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [POLICIES]
# (default: all, reactive,average,forecast,oracle)
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
traces=../shared/traces
which="${1:-all}"
policies="${2:-reactive,average,forecast,oracle}"

# name trace machine-flags eval-from eval-to chain-sizes
run_trace() {
  local name=$1 trace=$2 machine=$3 from=$4 to=$5 sizes=$6
  for chain in $sizes; do
    for calibration in none infer; do
      echo "== $name, $chain-node chains, $from .. $to, --calibration $calibration"
      # shellcheck disable=SC2086 # $machine is a list of words
      /usr/bin/time -f "eval wall %e s" "$mirage" eval --trace "$trace" $machine --lenient \
        --chain-nodes "$chain" --from "$from" --to "$to" --policies "$policies" \
        --calibration "$calibration" 2>&1 | tr '\r' '\n' | grep -v -E '^eval: '
    done
  done
}

want() { [ "$which" = "$1" ] || [ "$which" = all ]; }
if want ls6; then
  run_trace ls6 "$traces/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz" "--nodes 88" \
    2023-02-01 2023-03-01 "1 8"
fi
if want sdsc; then
  run_trace sdsc "$traces/swf-classic/SDSC-SP2-1998-4.2-cln.swf.gz" "" 1998-09-01 1998-10-01 "1 8"
fi
if want kth; then
  run_trace kth "$traces/swf-classic/KTH-SP2-1996-2.1-cln.swf.gz" "" 1997-02-01 1997-03-01 "1 8"
fi
if want ctc; then
  run_trace ctc "$traces/swf-classic/CTC-SP2-1996-3.1-cln.swf.gz" "" 1996-12-01 1997-01-01 "1 8"
fi
if want hpc2n; then
  run_trace hpc2n "$traces/swf-classic/HPC2N-2002-2.2-cln.swf.gz" "" 2003-01-01 2003-02-01 "1 8"
fi
if want theta; then
  # Theta's jobs are 128 nodes and more (its most common size), and run at most a day.
  run_trace theta "$traces/hpc-modern/theta_2022.swf.gz" "--limit 1440" 2022-06-01 2022-07-01 "128"
fi
