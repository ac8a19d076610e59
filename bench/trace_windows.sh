# The shared traces and their windows, once for every benchmark that reads them: three months to
# train on (bench/learned_verdict.sh) and the month after, where policies are judged. Sourced, from
# the repository's root, by the benchmarks:
#   for_each_trace WHICH FUNCTION
# calls FUNCTION NAME LABEL TRACE MACHINE_FLAGS TRAIN_FROM EVAL_FROM EVAL_TO CHAIN_SIZES for the
# trace named WHICH, or for each with "all". Training ends where evaluation begins; Theta has no
# training window (TRAIN_FROM "-").
trace_windows=(
  "ls6|LS6, Feb 2023|gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz|--cluster-nodes 88|2022-11-01|2023-02-01|2023-03-01|1 8"
  "sdsc|SDSC-SP2, Sep 1998|swf-classic/SDSC-SP2-1998-4.2-cln.swf.gz||1998-06-01|1998-09-01|1998-10-01|1 8"
  "kth|KTH-SP2, Feb 1997|swf-classic/KTH-SP2-1996-2.1-cln.swf.gz||1996-11-01|1997-02-01|1997-03-01|1 8"
  "ctc|CTC-SP2, Dec 1996|swf-classic/CTC-SP2-1996-3.1-cln.swf.gz||1996-09-01|1996-12-01|1997-01-01|1 8"
  "hpc2n|HPC2N, Jan 2003|swf-classic/HPC2N-2002-2.2-cln.swf.gz||2002-10-01|2003-01-01|2003-02-01|1 8"
  # Theta's jobs are 128 nodes and more (its most common size), and run at most a day.
  "theta|Theta, Jun 2022|hpc-modern/theta_2022.swf.gz|--time 1440|-|2022-06-01|2022-07-01|128"
)

# Every baseline at every setting of its risk knob, as `--sweep-risk` sweeps them
# (agents/src/PolicyRegistry.cpp), for benchmarks that list them beside other policies.
baseline_points=reactive
for family in average forecast forecast-recent; do
  for lead in -4h -2h -1h 0 1h 2h 4h 8h 12h; do baseline_points+=",$family@$lead"; done
done
for lead in 0 1h 2h 4h 6h 9h 12h 18h 1d; do baseline_points+=",static@$lead"; done
for level in 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9; do baseline_points+=",quantile@$level"; done

# The models bench/learned_verdict.sh trained in DIR for trace NAME's CHAIN-node chains, as ",A,B"
# to append to a --policies list (empty when there are none).
trained_models() {
  local dir=$1 name=$2 chain=$3 agent list=""
  for agent in dqn pg moe; do
    [ -f "$dir/$name-$chain-$agent.mirage-model" ] && list+=",$dir/$name-$chain-$agent.mirage-model"
  done
  echo "$list"
}

for_each_trace() {
  local which=$1 run=$2 row name label file machine train_from eval_from eval_to sizes
  for row in "${trace_windows[@]}"; do
    IFS='|' read -r name label file machine train_from eval_from eval_to sizes <<<"$row"
    if [ "$which" = "$name" ] || [ "$which" = all ]; then
      "$run" "$name" "$label" "${MIRAGE_TRACES:-../shared/traces}/$file" "$machine" "$train_from" "$eval_from" \
        "$eval_to" "$sizes"
    fi
  done
}

# `$mirage eval ARGS --json` into JSON, its wall time in $wall (and JSON.wall); with
# MIRAGE_BENCH_REREAD=1 and JSON kept from an earlier run (MIRAGE_BENCH_KEEP), that run is read
# again instead. Fails as eval does.
kept_eval() {
  local json=$1 start
  shift
  if [ -n "${MIRAGE_BENCH_REREAD:-}" ] && [ -s "$json" ] && [ -s "$json.wall" ]; then
    wall=$(cat "$json.wall")
    return 0
  fi
  start=$(date +%s.%N)
  # shellcheck disable=SC2154 # $mirage: the program of the benchmark that sources this file
  "$mirage" eval "$@" --json 2>/dev/null >"$json" || return 1
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  echo "$wall" >"$json.wall"
}
