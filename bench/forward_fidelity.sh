#!/usr/bin/env bash
# How far the calibrated replay predicts a month the fit never saw: on every shared trace's
# evaluation month (bench/trace_windows.sh), `mirage trace fidelity --fit-until` with the
# calibration fitted on the months before it, beside the same month replayed with the calibration
# fitted on the whole log (in sample). Prints one table (docs/results/fidelity.md); asserts nothing.
#   bench/forward_fidelity.sh [ls6|sdsc|kth|ctc|hpc2n|theta|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"

# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

echo "| log, month judged | jobs | forward: mean ratio, over 1 h sim vs real, rank | in sample: the same | 8+ nodes: forward ratio, in sample |"
echo "|---|---|---|---|---|"
run_trace() {
  local label=$2 trace=$3 machine=${4%%--limit*} from=$6 to=$7
  # shellcheck disable=SC2086 # $machine is a list of words
  "$mirage" trace fidelity "$trace" $machine --lenient --fit-until "$from" --to "$to" \
    --what-if-nodes none --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
def row(f):
    return "%.2f, %.0f%% vs %.0f%%, %.2f" % (f["mean_ratio"], 100 * f["sim_over_1h"], 100 * f["real_over_1h"], f["rank_correlation"])
def big(r):
    g = [f for f in r["by_size"] if f["group"].startswith("8+")]
    return "%.2f (%d jobs)" % (g[0]["mean_ratio"], g[0]["jobs"]) if g else "none"
ins = d["in_sample"]
print("| %s | %d | %s | %s | %s, %s |" % (sys.argv[1], d["compared"], row(d["overall"]), row(ins["overall"]), big(d), big(ins).split(" ")[0]))
' "$label"
}
for_each_trace "$which" run_trace
