#!/usr/bin/env bash
# Trains the learned agents and evaluates each beside the baselines, the protocol of the learned
# agents' issue: train on three months of a trace, evaluate on the month after, 1-node and
# 8-node chains. Prints `mirage train`'s summaries and `mirage eval`'s tables; asserts nothing.
# LS6 and SDSC-SP2 are the traces of the issue; KTH-SP2, CTC-SP2 and HPC2N are ones that no
# setting was tuned on (each first run after the defaults were fixed; HPC2N's window chosen by its
# recorded load alone, before any run on it).
#   bench/learned_agents.sh [ls6|sdsc|kth|ctc|hpc2n|all] [AGENT...]   (default: all, dqn pg moe)
# Models, probe caches and logs go to $MIRAGE_BENCH_DIR (default build/learned-bench);
# $MIRAGE_CLUSTER_FLAGS joins every `mirage train` and `mirage eval` (the cluster both replay, e.g.
# "--calibration auto"); $MIRAGE_TRAIN_FLAGS joins every `mirage train` (give such runs their own
# MIRAGE_BENCH_DIR), e.g.
#   printf 'window_clause = true\noverlap_confidence = 0.99\n' > recipe.toml
#   MIRAGE_TRAIN_FLAGS="--hyperparameters recipe.toml" bench/learned_agents.sh ls6
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
out="${MIRAGE_BENCH_DIR:-build/learned-bench}"
which="${1:-all}"
shift || true
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(dqn pg moe)
mkdir -p "$out"

# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

# See for_each_trace: train on the three months before the evaluation month, 1- and 8-node
# chains; Theta has no training window.
run_trace() {
  local name=$1 trace=$3 machine=$4 from=$5 to=$6 efrom=$6 eto=$7
  [ "$from" != - ] || return 0
  for chain in 1 8; do
    local models=()
    for agent in "${agents[@]}"; do
      local model="$out/$name-$chain-$agent.mirage-model"
      echo "== $name, $chain-node chains: training $agent"
      # shellcheck disable=SC2086 # $machine and the flags are lists of words
      /usr/bin/time -f "train wall %e s" "$mirage" train --agent "$agent" --trace "$trace" $machine \
        --nodes "$chain" --from "$from" --to "$to" --out "$model" \
        --probe-cache "$out/probes" ${MIRAGE_CLUSTER_FLAGS:-} ${MIRAGE_TRAIN_FLAGS:-} 2>&1 | tr '\r' '\n' | grep -v -E '(steps|probing episodes) '
      models+=("$model")
    done
    local list
    list=$(IFS=,; echo "reactive,average,forecast,oracle,${models[*]}")
    echo "== $name, $chain-node chains: evaluation on $efrom .. $eto"
    # shellcheck disable=SC2086
    "$mirage" eval --trace "$trace" $machine --nodes "$chain" --from "$efrom" --to "$eto" \
      --policies "$list" ${MIRAGE_CLUSTER_FLAGS:-} 2>&1 | tr '\r' '\n' | grep -v -E '^eval: '
  done
}

for_each_trace "$which" run_trace
