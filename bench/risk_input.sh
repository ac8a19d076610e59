#!/usr/bin/env bash
# The agents with the risk as an input (docs/learned-agents.md: one objective, the user's), on
# LS6's CHAIN-node chains (1 and 8 by default): trained on 2022-11-01 .. 2023-01-27 in the world
# of the log's real waits (the replay calibrated on the months before February), pg in three
# variants (plain; residual on quantile@RISK with the binned wait distribution of those months;
# the sequence model over the last 12 hourly snapshots), and dqn and moe with the risk as an
# input alone ($MIRAGE_VARIANTS names some of risk, residual, seq, dqn and moe; default all),
# each with its CPU time and peak memory; then
# judged on February 2023 in both worlds with --sweep-risk beside reactive, forecast, quantile and
# the oracle. Prints what `mirage train` and `mirage eval` print; the files stay in
# $MIRAGE_BENCH_DIR (default build/risk-input-bench), and a model already there is not retrained.
#   bench/risk_input.sh [CHAIN...]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
dir="${MIRAGE_BENCH_DIR:-build/risk-input-bench}"
trace="${MIRAGE_TRACES:-../shared/traces}/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz"
machine=(--cluster-nodes 88 --lenient)
mkdir -p "$dir"
recipe() {  # NAME KEY=VALUE...
  local file="$dir/$1.toml"
  shift
  printf 'ensemble = 1\nepochs = 15\npatience = 4\nrisk_input = true\n' >"$file"
  for kv in "$@"; do printf '%s\n' "$kv" >>"$file"; done
  echo "$file"
}
chains=("$@")
[ $# -gt 0 ] || chains=(1 8)
for chain in "${chains[@]}"; do
  waits="$dir/ls6-$chain-waits.toml"
  [ -f "$waits" ] || "$mirage" trace waits "$trace" "${machine[@]}" --nodes "$chain" \
    --from 2022-11-01 --to 2023-02-01 --out "$waits" >/dev/null
  models=""
  for variant in ${MIRAGE_VARIANTS:-risk residual seq dqn moe}; do
    model="$dir/ls6-$chain-$variant.mirage-model"
    models+=",$model"
    [ ! -f "$model" ] || continue
    agent=pg
    case $variant in
      risk) extra=(--hyperparameters "$(recipe risk)") ;;
      residual) extra=(--hyperparameters "$(recipe residual quantile_residual=true)" --wait-distribution "$waits") ;;
      seq) extra=(--hyperparameters "$(recipe seq history=12)") ;;
      dqn | moe) agent=$variant extra=(--hyperparameters "$(recipe risk)") ;;
    esac
    echo "== LS6 $chain-node chains: training $agent ($variant)"
    /usr/bin/time -f "CPU %U s user + %S s system, wall %e s, peak memory %M KiB" \
      "$mirage" train --agent "$agent" --trace "$trace" "${machine[@]}" --nodes "$chain" \
      --from 2022-11-01 --to 2023-01-27 --fit-until 2023-02-01 --successor-wait logged \
      --logged-window 7d --probe-cache "$dir/probes" "${extra[@]}" --out "$model" 2>"$dir/train-$chain-$variant.err"
    tail -n 1 "$dir/train-$chain-$variant.err"
  done
  echo "== LS6 $chain-node chains: judged on February 2023"
  "$mirage" eval --trace "$trace" "${machine[@]}" --nodes "$chain" --from 2023-02-01 \
    --to 2023-03-01 --fit-until 2023-02-01 --successor-wait both --logged-window 7d \
    --sweep-risk --pick-before 0 --every "${MIRAGE_EVERY:-4h}" --policies "reactive,forecast,quantile,oracle$models" 2>/dev/null
done
