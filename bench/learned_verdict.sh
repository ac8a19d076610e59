#!/usr/bin/env bash
# The learned agents judged forward, in both worlds, in users' units, and the verdict that sets
# the default policy of new campaigns (docs/results/learned-agents.md, issue 58).
# For every shared log and chain (bench/trace_windows.sh; LS6 is judged on January, as
# bench/campaign_advice.sh, because a campaign may need 30 days of log after its start):
#  1. trains each agent on the three months before the judged month, the calibration fitted on
#     those months alone (--fit-until), the training episodes over before the month begins;
#  2. judges whole two-week campaigns (336 h of compute in the log's segments) started every
#     24 h over the month, concurrent overlap and hand-off, in the calibrated replay and in the
#     world of the log's real waits (--successor-wait both): every baseline at every setting of
#     its risk knob, the oracle and the models; the baselines' point chosen on the month before
#     (--pick-before 28d);
#  3. bench/learned_verdict.py reads the figures and prints the tables and the verdict, and writes
#     them into docs/results/learned-agents.md (and the table of where learning helps into
#     docs/learned-agents.md) and the verdict to
#     daemon/config/default-policy.toml, which the build compiles in as the default policy.
# Prints figures; asserts nothing.
#   bench/learned_verdict.sh [TRACE[:CHAINS]...|all]   (default: all)
# TRACE: ls6, sdsc, kth, ctc, hpc2n or theta; CHAINS: the chain sizes to judge, comma-separated
# (kth:8 hpc2n:1,8), all of the trace's where not given. The tables keep the page's rows of the
# chains a run does not judge (learned_verdict.py --keep-page), so that a run of some chains
# completes the verdict over all of them.
# $MIRAGE_BENCH_DIR (default build/verdict-bench) keeps models, probes, logs and each case's
# eval JSON: a model or a JSON already there is reused (delete it to measure again), so a run
# cut short goes on where it stopped. $MIRAGE_AGENTS (default "moe pg dqn residual") names the
# agents (residual: pg with the risk as an input, a departure from quantile@RISK, trained in the
# world of real waits with the chain's binned wait distribution of the training months, judged
# at the verdict's price, risk 0.5);
# $MIRAGE_TRAIN_FLAGS replaces the flags below that every `mirage train` gets (the recipe file
# and --every 4h);
# $MIRAGE_OVERLAPS (e.g. "handoff") restricts the overlap modes judged (two runs on one DIR, one
# mode each, judge a chain side by side once its models are trained);
# $MIRAGE_CHAINS (e.g. "1") restricts the chain sizes of every TRACE without its own; MIRAGE_VERDICT_ONLY=1 only reads the
# JSONs there; MIRAGE_VERDICT_FILE= (empty) prints the verdict without writing it or the page (a
# partial run, another recipe).
set -euo pipefail
cd "$(dirname "$0")/.."
mirage="${MIRAGE:-${MIRAGE_BUILD_DIR:-build}/cli/mirage}"
dir="${MIRAGE_BENCH_DIR:-build/verdict-bench}"
read -r -a agents <<<"${MIRAGE_AGENTS:-moe pg dqn residual}"
mkdir -p "$dir"
# The agents choose their epoch and rule for the least cost at equal prices of an hour waited and
# an hour held twice (mirage train's one objective), the user's. One network a model
# (ensemble = 1) and at most 15 epochs (patience 4) keep the 2-core machine's budget (the
# defaults: an ensemble of three, 40 epochs, patience 6), and so do training samples every 4 h
# (train's default: 1 h): probing a chain's three months at 1 h took 20 to 40 minutes on the
# loaded machine. The probes are cached in $dir/probes, shared by the
# agents of a chain: the first one probes, the others read.
recipe="$dir/recipe.toml"
[ -f "$recipe" ] || printf 'ensemble = 1\nepochs = 15\npatience = 4\n' >"$recipe"
# The residual's (bench/risk_input.sh's recipe, where it reached the frontier in real waits).
residual_recipe="$dir/residual.toml"
[ -f "$residual_recipe" ] ||
  printf 'ensemble = 1\nepochs = 15\npatience = 4\nrisk_input = true\nquantile_residual = true\n' \
    >"$residual_recipe"

# shellcheck source=bench/trace_windows.sh
. bench/trace_windows.sh

day_before() { date -u -d "$1 - $2 days" +%F; }

run_trace() {
  local name=$1 label=$2 trace=$3 machine=$4 train_from=$5 from=$6 to=$7 sizes=$8
  if [ "$name" = ls6 ]; then label="LS6, Jan 2023" train_from=2022-10-06 from=2023-01-01 to=2023-01-29; fi
  # Theta's window has no training months in trace_windows.sh: the three before June.
  [ "$name" != theta ] || train_from=2022-03-01
  # Training episodes (two segments) end before the judged month begins.
  local train_to
  train_to=$(day_before "$from" 5)
  for chain in ${MIRAGE_CHAINS:-$sizes}; do
    local models=""
    for agent in "${agents[@]}"; do
      local model="$dir/$name-$chain-$agent.mirage-model" flags learner=$agent
      # shellcheck disable=SC2206 # lists of words
      flags=(${MIRAGE_TRAIN_FLAGS:---hyperparameters $recipe --every 4h})
      if [ "$agent" = residual ]; then
        # The chain's binned wait distribution of the training months, as quantile gets it.
        local waits="$dir/$name-$chain-waits.toml"
        # shellcheck disable=SC2086
        [ -f "$waits" ] || "$mirage" trace waits "$trace" $machine --lenient --nodes "$chain" \
          --from "$train_from" --to "$from" --out "$waits" >/dev/null
        learner=pg
        flags=(--hyperparameters "$residual_recipe" --every 4h --wait-distribution "$waits"
          --successor-wait logged --logged-window 7d)
      fi
      if [ ! -f "$model" ]; then
        echo "== $label, $chain-node chains: training $agent on $train_from .. $train_to" >&2
        # shellcheck disable=SC2086 # $machine and the flags are lists of words
        /usr/bin/time -f "train wall %e s, CPU %U s user + %S s system" "$mirage" train \
          --agent "$learner" --trace "$trace" $machine --lenient --nodes "$chain" \
          --from "$train_from" --to "$train_to" --fit-until "$from" --out "$model" \
          --probe-cache "$dir/probes" "${flags[@]}" >"$dir/$name-$chain-$agent.log" 2>&1 ||
          { echo "   training failed: $dir/$name-$chain-$agent.log" >&2; continue; }
        tail -n 1 "$dir/$name-$chain-$agent.log" >&2
      fi
      models+=",$model"
    done
    for overlap in ${MIRAGE_OVERLAPS:-concurrent handoff}; do
      local json="$dir/$name-$chain-$overlap.json"
      [ ! -s "$json" ] || continue
      echo "== $label, $chain-node chains, $overlap: judging on $from .. $to" >&2
      local start policies="$baseline_points,oracle$models" left_out=""
      start=$(date +%s)
      judge() {
        # shellcheck disable=SC2086
        "$mirage" eval --trace "$trace" $machine --lenient --nodes "$chain" --from "$from" \
          --to "$to" --every 24h --work 336 --overlap "$overlap" --policies "$policies" \
          --successor-wait both --pick-before 28d --json 2>"$dir/$name-$chain-$overlap.err" \
          >"$json.part"
      }
      judge || { echo "   eval failed: $dir/$name-$chain-$overlap.err" >&2; continue; }
      # A world with samples where no campaign every point finished: some points ran away (their
      # successors started so early that the overlap, lost in concurrent mode, kept the campaign
      # from finishing within twice the segments it needs), and one such point on a start time
      # takes that start time from every point. Judged again without the points that left a
      # campaign incomplete there (the oracle kept); a model among them earns nothing.
      left_out=$(python3 bench/learned_verdict.py --runaway "$json.part")
      if [ -n "$left_out" ]; then
        echo "   no campaign every point finished; judged again without $left_out" >&2
        policies=$(python3 -c 'import sys; out = set(sys.argv[2].split(","))
print(",".join(p for p in sys.argv[1].split(",") if p not in out))' "$policies" "$left_out")
        judge || { echo "   eval failed: $dir/$name-$chain-$overlap.err" >&2; continue; }
      fi
      python3 - "$json.part" "$label" "$(($(date +%s) - start))" "$left_out" >"$json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["bench"] = {"label": sys.argv[2], "wall_s": int(sys.argv[3]),
              "left_out": [p for p in sys.argv[4].split(",") if p]}
json.dump(d, sys.stdout)
PY
      rm -f "$json.part"
    done
  done
}

if [ -z "${MIRAGE_VERDICT_ONLY:-}" ]; then
  for arg in "${@:-all}"; do
    case $arg in
      *:*)
        chains=${arg#*:}
        MIRAGE_CHAINS=${chains//,/ } for_each_trace "${arg%%:*}" run_trace
        ;;
      *) for_each_trace "$arg" run_trace ;;
    esac
  done
fi
verdict="${MIRAGE_VERDICT_FILE-daemon/config/default-policy.toml}"
page=docs/results/learned-agents.md
pages=(--page "$page" --page docs/learned-agents.md)
python3 bench/learned_verdict.py "$dir" --keep-page "$page" ${verdict:+--verdict "$verdict" "${pages[@]}"}
