#!/usr/bin/env bash
# The step of the daemon's adaptive live recalibration (AdaptiveWaitCalibration), chosen on each
# fit window and then judged forward (docs/results/wait-model.md#adaptive-live-recalibration-its-step-chosen-on-the-fit-months).
# For each trace of bench/trace_windows.sh whose cross-fitted wait model is in MODELS
# (`--cross-fit-folds 3`, as bench/wait_model.sh writes NAME-mlp.json there):
#   chosen: the network fitted with the window's last fold left out (the file's last member) gets
#     its tail set on the window's jobs before that fold (`train --network-of`), and is replayed
#     as if live on that last fold, a step of STEPS a row; the step of least pinball loss over all
#     jobs is chosen. Nothing of the judged month is read.
#   judged: the file itself on the judged month, recalibrated live by the latest 50, by the step
#     chosen on its window and by the daemon's step (AdaptiveWaitCalibration::kStep, the row
#     "recalibrated adaptive"); the other steps are computed too and never read.
# Prints per trace the step chosen and every step's pinball loss on the last fold (what a step
# common to every site is chosen on), then per class the pinball loss and the 50% / 90% coverage
# of each way of recalibrating; asserts nothing.
#   MODELS=DIR [STEPS=0,0.002,0.005,0.01,0.02,0.05] bench/aci_step.sh [TRACE|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
steps="${STEPS:-0,0.002,0.005,0.01,0.02,0.05}"
models="${MODELS:?MODELS=DIR holding the cross-fitted NAME-mlp.json files}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

echo "| trace, month | step chosen on the fit window's last fold (its pinball h by step) | class | jobs | latest 50: pinball h, in 50% / 90% | adaptive, step chosen: pinball h, in 50% / 90% | adaptive, the daemon's step: pinball h, in 50% / 90% | on both targets: latest 50 / chosen / daemon's |"
echo "|---|---|---|---|---|---|---|---|"

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 train_from=$5 from=$6 to=$7
  [ "$train_from" != - ] || train_from=$(date -u -d "$from -3 months" +%F)
  local model="$models/$name-mlp.json"
  [ -f "$model" ] || { echo "| $label | (no $model) ||||||"; return; }
  # The last fold starts two thirds into the window (WaitFold: spans of equal time).
  local fold_from
  fold_from=$(python3 - "$model" "$out/last-member.json" <<'PY'
import datetime as dt, json, sys
m = json.load(open(sys.argv[1]))
folds = m.get("cross_fit_folds", 0)
if folds < 2:
    sys.exit(f"{sys.argv[1]}: cross_fit_folds is {folds}: expected a cross-fitted file")
f, t = (dt.datetime.fromisoformat(m[k]) for k in ("fitted_from", "fitted_to"))
seconds = int((t - f).total_seconds())
m["members"] = [m["members"][-1]]
json.dump(m, open(sys.argv[2], "w"))
print((f + dt.timedelta(seconds=seconds * (folds - 1) // folds)).isoformat())
PY
)
  # shellcheck disable=SC2086 # $machine is a list of words
  "$mirage" train --agent wait-model --trace "$trace" $machine --lenient --from "$train_from" \
    --to "$fold_from" --network-of "$out/last-member.json" --max-jobs 4000 \
    --out "$out/last-fold.json" >/dev/null 2>"$out/train.err" ||
    { echo "| $label | (tail fit failed: $(tail -1 "$out/train.err")) ||||||"; return; }
  # shellcheck disable=SC2086
  "$mirage" trace waits "$trace" $machine --lenient --check "$out/last-fold.json" \
    --from "$fold_from" --to "$from" --json --no-replays --adaptive-steps "$steps" \
    2>/dev/null >"$out/choose.json" || { echo "| $label | (replay of the last fold failed) ||||||"; return; }
  # shellcheck disable=SC2086
  "$mirage" trace waits "$trace" $machine --lenient --check "$model" --from "$from" --to "$to" \
    --json --no-replays --adaptive-steps "$steps" 2>/dev/null >"$out/judged.json" ||
    { echo "| $label | (check failed) ||||||"; return; }
  python3 - "$out/choose.json" "$out/judged.json" "$label" <<'PY'
import json, sys
choose, judged, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
prefix = "recalibrated adaptive, step "
everyone = next(c for c in choose["classes"] if c["class"] == "all")
by_step = {p["name"][len(prefix):]: p["pinball_h"] for p in everyone["predictors"]
           if p["name"].startswith(prefix)}
chosen = min(by_step, key=lambda s: (by_step[s], float(s)))
tried = ", ".join(f"{s}: {v:.3f}" for s, v in by_step.items())
def on_target(p):  # the shares as the tables print them, whole percents
    return 45 <= round(100 * p["in_50"]) <= 55 and 85 <= round(100 * p["in_90"]) <= 95
def cell(p):
    return f"{p['pinball_h']:.3f}, {100 * p['in_50']:.0f}% / {100 * p['in_90']:.0f}%"
for c in judged["classes"]:
    if c.get("too_few"):
        print(f"| {label} | {chosen} | {c['class']} | {c['jobs']} | (fewer than 30 jobs) ||||")
        continue
    p = {q["name"]: q for q in c["predictors"]}
    rows = [p["recalibrated live"], p[prefix + chosen], p["recalibrated adaptive"]]
    targets = "-" if c["class"] == "all" else " / ".join(f"{on_target(r):d}" for r in rows)
    print(f"| {label} | {chosen} ({tried}) | {c['class']} | {c['jobs']} | "
          f"{' | '.join(cell(r) for r in rows)} | {targets} |")
PY
}
for_each_trace "$which" run_trace
