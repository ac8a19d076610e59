#!/usr/bin/env bash
# Whether the learned agents earn a place on the risk frontier (docs/results/quantile-baseline.md):
# on each trace's evaluation month, the models bench/learned_verdict.sh trained (in
# $MIRAGE_BENCH_DIR, default build/verdict-bench) beside every baseline at every setting of its
# risk knob (the points `mirage eval --sweep-risk` tries, quantile included), concurrent overlap.
# Prints per model whether any other point interrupts and overlaps no more (and one less), and
# the point that does so with the least overlap; asserts nothing. The cluster flags must match
# the training's ($MIRAGE_CLUSTER_FLAGS, e.g. "--calibration auto").
#   bench/learned_frontier.sh [ls6|sdsc|kth|ctc|hpc2n|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
models="${MIRAGE_BENCH_DIR:-build/verdict-bench}"
which="${1:-all}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "| trace, month | chain | model | mean int. / zero / overlap | on the frontier? | dominated by |"
echo "|---|---|---|---|---|---|"
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 from=$6 to=$7 sizes=$8
  for chain in $sizes; do
    local list
    list=$(trained_models "$models" "$name" "$chain")
    [ -n "$list" ] || continue
    # shellcheck disable=SC2086 # $machine and the flags are lists of words
    "$mirage" eval --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
      --to "$to" --policies "$baseline_points$list" --successor-wait replay --pick-before 0 \
      ${MIRAGE_CLUSTER_FLAGS:-} --json 2>/dev/null \
      >"$out/eval.json"
    python3 - "$out/eval.json" "$label" "$chain" <<'PY'
import json, os, sys
pol = json.load(open(sys.argv[1]))["policies"]
def cost(n):
    return pol[n]["mean_interruption_h"], pol[n]["mean_overlap_h"]
def cell(n):
    p = pol[n]
    return (f"{p['mean_interruption_h']:.2f} h / {100 * p['zero_interruption_share']:.0f}% / "
            f"{p['mean_overlap_h']:.2f} h")
for m in [n for n in pol if n.endswith(".mirage-model")]:
    mi, mo = cost(m)
    better = [n for n in pol if n != m and n != "oracle" and not n.endswith(".mirage-model")
              and cost(n)[0] <= mi and cost(n)[1] <= mo and cost(n) != (mi, mo)]
    name = os.path.basename(m).replace(".mirage-model", "").rsplit("-", 1)[1]
    by = min(better, key=lambda n: cost(n)[1]) if better else None
    same = pol[m].get("decides_as")
    print(f"| {sys.argv[2]} | {sys.argv[3]} | `{name}` | {cell(m)} | "
          f"{'no' if by else 'yes'}{' (decides as ' + os.path.basename(same).replace('.mirage-model', '') + ')' if same else ''} | "
          f"{('`' + by + '` ' + cell(by)) if by else ''} |")
PY
  done
}

for_each_trace "$which" run_trace
