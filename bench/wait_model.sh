#!/usr/bin/env bash
# The learned wait model judged forward on every shared trace (docs/results/wait-model.md): fitted
# with `mirage train --agent wait-model` on the three months before each trace's evaluation month
# (bench/trace_windows.sh; Theta, without a training window, on the three months before June),
# then `mirage trace waits --check` on the month, beside the binned distribution fitted on the
# same months, the forecast's planned wait and the calibrated and uncalibrated replays. Prints per
# trace and size class the pinball loss (mean over the 7 levels, hours), the pinball at the median,
# the 50% and 90% intervals' coverage and the median absolute error of the median; asserts nothing.
# Beside each model, the same file with its tail (the blend and the recalibration per size class)
# taken out, the network alone ("network", what the model was before them), judged on the same
# jobs without the replays.
#   bench/wait_model.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [mlp|moe ...]
# SEEDS=N (default 3) fits N networks from different starting weights into one file, their
# quantiles averaged; each member is also judged alone (its own tail fitted on it, without the
# replays): the rows "seed K", whose spread is the noise a single network's figure carries.
# MODELS=DIR keeps the model files there (default: a temporary folder); TRAIN_FLAGS adds flags to
# `mirage train` (such as --no-blend, --max-jobs 5000, or --calibration-days 0 for the intervals
# set on the networks' early-stopping rows); NETWORKS_OF=DIR fits no network and takes
# DIR/NAME-ARCH.json's instead (only the tails are fitted again: seconds, no LibTorch); REPLAYS=0
# leaves the replays' rows out (the model, its network and the binned distribution only).
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
    local networks=(--seeds "${SEEDS:-3}")
    [ -z "${NETWORKS_OF:-}" ] || networks=(--network-of "$NETWORKS_OF/$name-$arch.json")
    # shellcheck disable=SC2086 # $machine is a list of words
    "$mirage" train --agent wait-model --architecture "$arch" --trace "$trace" $machine --lenient \
      --from "$train_from" --to "$from" --out "$model" "${networks[@]}" ${TRAIN_FLAGS:-} \
      >"$out/train.txt" 2>"$out/train.err" ||
      { echo "| $label | $arch | (train failed: $(tail -1 "$out/train.err")) |||||||"; continue; }
    train_s=$(echo "$(date +%s.%N) - $start" | bc)
    # Each member alone, its tail fitted on it as the file's was on the average (not for a
    # cross-fitted file, whose members are its folds' networks, each blind to a third of the tail).
    local members seeds=()
    members=$(python3 -c 'import json,sys; m = json.load(open(sys.argv[1]))
print(0 if m.get("cross_fit_folds", 0) else len(m["members"]))' "$model")
    if [ "$members" -gt 1 ]; then
      for ((k = 0; k < members; k++)); do
        python3 - "$model" "$models/$name-$arch.member$k.json" "$k" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["members"] = [m["members"][int(sys.argv[3])]]
json.dump(m, open(sys.argv[2], "w"))
PY
        # shellcheck disable=SC2086
        "$mirage" train --agent wait-model --trace "$trace" $machine --lenient --from "$train_from" \
          --to "$from" --out "$models/$name-$arch.seed$k.json" \
          --network-of "$models/$name-$arch.member$k.json" ${TRAIN_FLAGS:-} >/dev/null 2>&1 &&
          "$mirage" trace waits "$trace" $machine --lenient --check "$models/$name-$arch.seed$k.json" \
            --from "$from" --to "$to" --json --no-replays 2>/dev/null >"$out/seed$k.json" &&
          seeds+=("$out/seed$k.json")
      done
    fi
    local replays=()
    [ "${REPLAYS:-1}" != 0 ] || replays=(--no-replays)
    # shellcheck disable=SC2086
    "$mirage" trace waits "$trace" $machine --lenient --check "$model" --from "$from" --to "$to" \
      --json "${replays[@]+"${replays[@]}"}" 2>/dev/null >"$out/check.json" ||
      { echo "| $label | $arch | (check failed) |||||||"; continue; }
    # The network alone: every class's share 1, no shifts.
    local network="$models/$name-$arch.network.json"
    python3 - "$model" "$network" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for c in m.get("tail", {}).get("classes", []):
    c["model_weight"], c["shifts"] = 1.0, [0.0] * 7
json.dump(m, open(sys.argv[2], "w"))
PY
    # shellcheck disable=SC2086
    "$mirage" trace waits "$trace" $machine --lenient --check "$network" --from "$from" --to "$to" \
      --json --no-replays 2>/dev/null >"$out/network.json" ||
      { echo "| $label | $arch | (check of the network alone failed) |||||||"; continue; }
    python3 - "$out/check.json" "$label" "$arch" "$out/network.json" "${seeds[@]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
label, arch = sys.argv[2], sys.argv[3]
network = {c["class"]: c for c in json.load(open(sys.argv[4]))["classes"]}
seeds = [{c["class"]: c for c in json.load(open(f))["classes"]} for f in sys.argv[5:]]
for c in d["classes"]:
    if c.get("too_few"):
        continue
    for p in network[c["class"]].get("predictors", []):
        if p["name"].endswith(".network.json"):
            p["name"] = "network"
            c["predictors"].insert(1, p)
    for k, s in enumerate(seeds):
        for p in s[c["class"]].get("predictors", []):
            if p["name"].endswith(f".seed{k}.json"):
                p["name"] = f"seed {k}"
                c["predictors"].insert(2 + k, p)
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
    echo "<!-- $name $arch: $(tr '\n' ' ' <"$out/train.txt") wall ${train_s}s, $(stat -c %s "$model") bytes -->"
  done
}
for_each_trace "$which" run_trace
