#!/usr/bin/env bash
# Whether a fit window's last weeks say more of the month after it than the whole window does
# (docs/results/wait-model.md): per shared trace and size class, the binned distribution
# (`mirage trace waits`, every limit) fitted on the window's last DAYS days and on its three
# months, each judged on the month after (`trace waits --check`, no replays). What the wait
# model's calibration set (the window's last weeks) and its early stopping (the latest 20%) lean
# on. Prints one row per trace, class and fit; asserts nothing.
#   bench/wait_recency.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all] [DAYS]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
days="${2:-14}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

echo "| trace, month | class | fitted on | jobs fitted | pinball h | in 50% | in 90% |"
echo "|---|---|---|---|---|---|---|"
run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 train_from=$5 from=$6 to=$7 sizes=$8
  [ "$train_from" != - ] || train_from=$(date -u -d "$from -3 months" +%F)
  local last_from nodes
  # Every limit is read here (--time 1m), whatever limit the trace's chains take.
  machine=$(sed -E 's/--time [^ ]+//' <<<"$machine")
  last_from=$(date -u -d "$from -$days days" +%F)
  # Theta's chains are 128 nodes, its only class; the others' classes are 1, 2-7 and 8+ nodes.
  [ "$name" = theta ] && sizes=128 || sizes="1 2 8"
  for nodes in $sizes; do
    for fit in "last $days days|$last_from" "three months|$train_from"; do
      local what=${fit%%|*} fit_from=${fit##*|} file="$out/$name-$nodes.toml"
      # --time 1m: the jobs of every limit (a limit of 30 s or more)
      # shellcheck disable=SC2086 # $machine is a list of words
      "$mirage" trace waits "$trace" $machine --lenient --nodes "$nodes" --time 1m \
        --from "$fit_from" --to "$from" --out "$file" >"$out/fit.txt" 2>/dev/null ||
        { echo "| $label | $nodes nodes | $what | (fit failed) ||||"; continue; }
      # shellcheck disable=SC2086
      "$mirage" trace waits "$trace" $machine --lenient --nodes "$nodes" --time 1m \
        --check "$file" --from "$from" --to "$to" --json --no-replays 2>/dev/null >"$out/check.json" ||
        { echo "| $label | $nodes nodes | $what | (check failed) ||||"; continue; }
      python3 - "$out/check.json" "$out/fit.txt" "$label" "$what" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
fitted = re.search(r"(\d+) real jobs", open(sys.argv[2]).read())
label, what = sys.argv[3], sys.argv[4]
for c in d["classes"]:
    if c.get("too_few") or c["class"] == "all":
        continue
    p = next(p for p in c["predictors"] if p["name"].endswith(".toml"))
    print(f"| {label} | {c['class']} | {what} | {fitted.group(1) if fitted else '?'} | "
          f"{p['pinball_h']:.3f} | {100 * p['in_50']:.0f}% | {100 * p['in_90']:.0f}% |")
PY
    done
  done
}
for_each_trace "$which" run_trace
