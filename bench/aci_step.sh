#!/usr/bin/env bash
# The live recalibration of a wait model's intervals: the adaptive rule's step (AdaptiveWaitCalibration),
# with ADAPTIVE_MINIMUMS its size classes' minimum, with DECAYS the daemon's weighted rule's decay
# (WeightedWaitCalibration, ClassWaitCalibration) or with MINIMUMS its size classes' minimum,
# chosen on each fit window and then judged forward (docs/results/wait-model.md#live-recalibration-per-size-class-the-daemons-rule).
# For each trace of bench/trace_windows.sh whose cross-fitted wait model is in MODELS
# (`--cross-fit-folds 3`, as bench/wait_model.sh writes NAME-mlp.json there):
#   chosen: the network fitted with the window's last fold left out (the file's last member) gets
#     its tail set on the window's jobs before that fold (`train --network-of`), and is replayed
#     as if live on that last fold, a row per candidate: each step of STEPS (`--adaptive-steps`),
#     with ADAPTIVE_MINIMUMS the adaptive rule's pooled state and each minimum of a class's own
#     waits before its own state corrects it (`--adaptive-class-minimums`), with DECAYS each decay
#     of the weighted rule (`--weighted-decays`), or with MINIMUMS the weighted rule's pooled
#     state and each minimum (`--weighted-class-minimums`); the candidate of least
#     pinball loss over all jobs is chosen. Nothing of the judged month is read.
#   judged: the file itself on the judged month, recalibrated live by the latest 50, by every
#     candidate (the one chosen on its window marked), by the adaptive rule at its step (the row
#     "recalibrated adaptive") and by the daemon's rule (the row "recalibrated weighted").
# Prints per trace every candidate's pinball loss and classes on both targets on the last fold
# (what a rule common to every site is chosen on), then per class the pinball loss and the
# 50% / 90% coverage of each way of recalibrating on the judged month, counted closed and, in
# brackets, by the randomized PIT (a wait on a stated atom shares it); asserts nothing. The
# targets are judged on the closed count. With KEEP,
# each trace's two JSON answers are kept there (NAME-choose.json, NAME-judged.json).
#   MODELS=DIR [STEPS=0,0.002,0.005,0.01,0.02,0.05 | MINIMUMS=0,10,30,100,300 |
#     ADAPTIVE_MINIMUMS=0,10,30,100,300 | DECAYS=1,0.999,0.995,0.99,0.98,0.95] [KEEP=DIR] \
#     bench/aci_step.sh [TRACE|all]
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
which="${1:-all}"
if [ -n "${MINIMUMS:-}" ]; then
  candidates=(--weighted-class-minimums "$MINIMUMS")
elif [ -n "${ADAPTIVE_MINIMUMS:-}" ]; then
  candidates=(--adaptive-class-minimums "$ADAPTIVE_MINIMUMS")
elif [ -n "${DECAYS:-}" ]; then
  candidates=(--weighted-decays "$DECAYS")
else
  candidates=(--adaptive-steps "${STEPS:-0,0.002,0.005,0.01,0.02,0.05}")
fi
models="${MODELS:?MODELS=DIR holding the cross-fitted NAME-mlp.json files}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

echo "| trace, month | chosen on the fit window's last fold (by candidate: pinball h, classes on both targets) | class | jobs | latest 50 / each candidate (the chosen one marked *) / the adaptive rule / the daemon's: pinball h, in 50% / 90%, on both targets |"
echo "|---|---|---|---|---|"

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
    --from "$fold_from" --to "$from" --json --no-replays "${candidates[@]}" \
    2>/dev/null >"$out/choose.json" || { echo "| $label | (replay of the last fold failed) ||||||"; return; }
  # shellcheck disable=SC2086
  "$mirage" trace waits "$trace" $machine --lenient --check "$model" --from "$from" --to "$to" \
    --json --no-replays "${candidates[@]}" 2>/dev/null >"$out/judged.json" ||
    { echo "| $label | (check failed) ||||||"; return; }
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "$out/choose.json" "$KEEP/$name-choose.json"
    cp "$out/judged.json" "$KEEP/$name-judged.json"
  fi
  python3 - "$out/choose.json" "$out/judged.json" "$label" <<'PY'
import json, sys
choose, judged, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
daemon, adaptive = "recalibrated weighted", "recalibrated adaptive"
prefixes = ("recalibrated adaptive, step ", "recalibrated adaptive, per class from ",
            "recalibrated weighted, decay ", "recalibrated weighted, per class from ")
def candidate(name):  # the candidate a row states, or None
    if name in (adaptive + ", pooled", daemon + ", pooled"):
        return "pooled"
    return next((name[len(p):] for p in prefixes if name.startswith(p)), None)
def on_target(p):  # the shares as the tables print them, whole percents
    return 45 <= round(100 * p["in_50"]) <= 55 and 85 <= round(100 * p["in_90"]) <= 95
def rows(answer):
    return {c["class"]: {q["name"]: q for q in c["predictors"]} for c in answer["classes"]
            if not c.get("too_few")}
def cell(p):
    return (f"{p['pinball_h']:.3f}, {100 * p['in_50']:.0f}% / {100 * p['in_90']:.0f}% "
            f"(PIT {100 * p['in_50_pit']:.0f}% / {100 * p['in_90_pit']:.0f}%)")
fit = rows(choose)
names = [n for n in fit["all"] if candidate(n) is not None]
held = {n: sum(on_target(c[n]) for k, c in fit.items() if k != "all") for n in names}
chosen = min(names, key=lambda n: (fit["all"][n]["pinball_h"], n))
tried = ", ".join(f"{candidate(n)}: {fit['all'][n]['pinball_h']:.3f}, {held[n]} of {len(fit) - 1}"
                  for n in names)
for c in judged["classes"]:
    if c.get("too_few"):
        print(f"| {label} | {candidate(chosen)} | {c['class']} | {c['jobs']} | (fewer than 30 jobs) |")
        continue
    p = {q["name"]: q for q in c["predictors"]}
    cells = []
    for n in ["recalibrated live"] + names + [adaptive, daemon]:
        mark = "*" if n == chosen else ""
        target = "" if c["class"] == "all" else f", {on_target(p[n]):d}"
        tag = {"recalibrated live": "latest 50", adaptive: "adaptive"}.get(n) or candidate(n) \
            or "daemon's"
        cells.append(f"{tag}{mark}: {cell(p[n])}{target}")
    print(f"| {label} | {candidate(chosen)} ({tried}) | {c['class']} | {c['jobs']} | "
          f"{'; '.join(cells)} |")
PY
}
for_each_trace "$which" run_trace
