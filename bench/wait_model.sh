#!/usr/bin/env bash
# The learned wait model judged forward on every shared trace (docs/results/wait-model.md): fitted
# with `mirage train --agent wait-model` on the three months before each trace's evaluation month
# (bench/trace_windows.sh; Theta, without a training window, on the three months before June),
# then `mirage trace waits --check` on the month, beside the binned distribution fitted on the
# same months, the forecast's planned wait and the calibrated and uncalibrated replays. Prints per
# trace and size class the pinball loss (mean over the 7 levels, hours), the pinball at the median,
# the 50% and 90% intervals' coverage and the median absolute error of the median; asserts nothing.
#   bench/wait_model.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [mlp|moe ...]
# MODELS=DIR keeps the model files there (default: a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
shift || true
architectures=("${@:-mlp}")
[ ${#architectures[@]} -gt 0 ] || architectures=(mlp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models="${MODELS:-$out}"
mkdir -p "$models"

echo "| trace, month | arch | class | jobs | predictor | pinball h | pinball@50 h | in 50% | in 90% | median abs err h |"
echo "|---|---|---|---|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 train_from=$5 from=$6 to=$7
  [ "$train_from" != - ] || train_from=$(date -u -d "$from -3 months" +%F)
  for arch in "${architectures[@]}"; do
    local model="$models/$name-$arch.json" start train_s
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # $machine is a list of words
    "$mirage" train --agent wait-model --architecture "$arch" --trace "$trace" $machine --lenient \
      --from "$train_from" --to "$from" --out "$model" >"$out/train.txt" 2>"$out/train.err" ||
      { echo "| $label | $arch | (train failed: $(tail -1 "$out/train.err")) |||||||"; continue; }
    train_s=$(echo "$(date +%s.%N) - $start" | bc)
    # shellcheck disable=SC2086
    "$mirage" trace waits "$trace" $machine --lenient --check "$model" --from "$from" --to "$to" \
      --json 2>/dev/null >"$out/check.json" ||
      { echo "| $label | $arch | (check failed) |||||||"; continue; }
    python3 - "$out/check.json" "$label" "$arch" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
label, arch = sys.argv[2], sys.argv[3]
def h(v):
    return "-" if v is None else f"{v:.3f}"
def pct(v):
    return "-" if v is None else f"{100 * v:.0f}%"
for c in d["classes"]:
    if c.get("too_few"):
        print(f"| {label} | {arch} | {c['class']} | {c['jobs']} | (fewer than 30 jobs: not judged) ||||||")
        continue
    for p in c["predictors"]:
        name = "model" if p["name"].endswith(".json") else p["name"]
        if "pinball_50_h" not in p:
            print(f"| {label} | {arch} | {c['class']} | {c['jobs']} | {name} | (no figure for every job) |||||")
            continue
        print(f"| {label} | {arch} | {c['class']} | {c['jobs']} | {name} | {h(p['pinball_h'])} | "
              f"{p['pinball_50_h']:.3f} | {pct(p['in_50'])} | {pct(p['in_90'])} | "
              f"{p['median_abs_error_h']:.2f} |")
PY
    echo "<!-- $name $arch: $(head -c 300 "$out/train.txt" | tr '\n' ' ') wall ${train_s}s, $(stat -c %s "$model") bytes -->"
  done
}
for_each_trace "$which" run_trace
