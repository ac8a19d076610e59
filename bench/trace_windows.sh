# The shared traces and their windows, once for every benchmark that reads them: three months to
# train on (bench/learned_agents.sh) and the month after, where policies are judged. Sourced, from
# the repository's root, by the benchmarks:
#   for_each_trace WHICH FUNCTION
# calls FUNCTION NAME LABEL TRACE MACHINE_FLAGS TRAIN_FROM EVAL_FROM EVAL_TO CHAIN_SIZES for the
# trace named WHICH, or for each with "all". Training ends where evaluation begins; Theta has no
# training window (TRAIN_FROM "-").
trace_windows=(
  "ls6|LS6, Feb 2023|gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz|--nodes 88|2022-11-01|2023-02-01|2023-03-01|1 8"
  "sdsc|SDSC-SP2, Sep 1998|swf-classic/SDSC-SP2-1998-4.2-cln.swf.gz||1998-06-01|1998-09-01|1998-10-01|1 8"
  "kth|KTH-SP2, Feb 1997|swf-classic/KTH-SP2-1996-2.1-cln.swf.gz||1996-11-01|1997-02-01|1997-03-01|1 8"
  "ctc|CTC-SP2, Dec 1996|swf-classic/CTC-SP2-1996-3.1-cln.swf.gz||1996-09-01|1996-12-01|1997-01-01|1 8"
  "hpc2n|HPC2N, Jan 2003|swf-classic/HPC2N-2002-2.2-cln.swf.gz||2002-10-01|2003-01-01|2003-02-01|1 8"
  # Theta's jobs are 128 nodes and more (its most common size), and run at most a day.
  "theta|Theta, Jun 2022|hpc-modern/theta_2022.swf.gz|--limit 1440|-|2022-06-01|2022-07-01|128"
)

for_each_trace() {
  local which=$1 run=$2 row name label file machine train_from eval_from eval_to sizes
  for row in "${trace_windows[@]}"; do
    IFS='|' read -r name label file machine train_from eval_from eval_to sizes <<<"$row"
    if [ "$which" = "$name" ] || [ "$which" = all ]; then
      "$run" "$name" "$label" "../shared/traces/$file" "$machine" "$train_from" "$eval_from" \
        "$eval_to" "$sizes"
    fi
  done
}
