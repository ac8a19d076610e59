#!/usr/bin/env bash
# How fast `mirage eval` runs with the calibration on, beside Mirage's own simulator (the peer,
# ../shared/peer/README.md) in the same run: the two LS6 samples the peer's driver takes (8-node
# chains, 2023-02-01 00:00 and 04:00), first run (the calibration inferred and cached) and cached;
# a calibrated LS6 8-node episode; HPC2N's `trace fidelity` with inference, first run and cached.
# Prints figures (medians of ROUNDS runs, wall and CPU seconds of the whole process: user + system,
# threads included) and the load average before and after (on a shared machine a wall time is an
# upper bound, the CPU time says more); asserts nothing.
#
#   bench/eval_speed.sh [ROUNDS]      (default 3)
#
# MIRAGE_TRACES: the real logs (docs/traces.md). MIRAGE: the program (default build/cli/mirage).
# The peer runs where PEER_MIRAGE_GIT names the git directory of a clone of zhaozhang/Mirage and
# PEER_DRIVER its driver (default ../shared/peer/mirage_baselines_driver.py, run with one worker);
# else its figure is left out, and said so.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
mirage="${MIRAGE:-build/cli/mirage}"
traces="${MIRAGE_TRACES:?set MIRAGE_TRACES to the real logs folder (docs/traces.md)}"
ls6="$traces/gpu/tacc-ls6/ls6-a100-until-2023-02.log.gz"
hpc2n="$traces/swf-classic/HPC2N-2002-2.2-cln.swf.gz"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# "WALL CPU" of one run of the command, its output to $work/out and $work/err.
timed() {
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/out" 2>"$work/err"
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$work/time"
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

peer=()
if [ -n "${PEER_MIRAGE_GIT:-}" ]; then
  mkdir -p "$work/peer/src"
  git --git-dir="$PEER_MIRAGE_GIT" archive 6de19bc7 src 2>/dev/null |
    tar -x --strip-components=1 -C "$work/peer/src" || true
  zcat "$ls6" | tail -n +2 | awk 'NF==10 && $1 !~ /^-+$/ {$1=$1; print}' >"$work/peer/ls6.log"
  sed 's/Pool(2,/Pool(1,/' "${PEER_DRIVER:-../shared/peer/mirage_baselines_driver.py}" \
    >"$work/peer/driver.py"
  peer=(env MIRAGE_SRC="$work/peer/src" LS6_SPACES="$work/peer/ls6.log" python3
    "$work/peer/driver.py" 2 8 "$work/peer/out.pkl" 2023-02-01T00:00:00)
else
  echo "peer: PEER_MIRAGE_GIT not set (a clone of zhaozhang/Mirage): its figures are left out"
fi

# The replay alone, as the peer runs it: no logged world, no forward pick.
two_samples=(eval --trace "$ls6" --cluster-nodes 88 --nodes 8 --from 2023-02-01T00:00:00
  --to 2023-02-01T04:00:01 --every 4h --policies reactive,average --threads 1
  --successor-wait replay --pick-before 0)
february=(eval --trace "$ls6" --cluster-nodes 88 --nodes 8 --from 2023-02-01 --to 2023-03-01
  --every 4h --policies reactive,average --threads 1 --json --successor-wait replay --pick-before 0)
fidelity=(trace fidelity "$hpc2n" --calibration infer --what-if-nodes none)

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
: >"$work/rows"
for ((i = 1; i <= rounds; i++)); do
  # Each round in turn: the peer, then mirage inferring (an empty cache), then reading the cache.
  export XDG_CACHE_HOME="$work/cache-$i"
  if [ ${#peer[@]} -gt 0 ]; then echo "peer $(timed "${peer[@]}")" >>"$work/rows"; fi
  echo "first $(timed "$mirage" "${two_samples[@]}")" >>"$work/rows"
  grep -q "calibration inferred from .*saved to" "$work/err" || { cat "$work/err"; exit 1; }
  echo "cached $(timed "$mirage" "${two_samples[@]}")" >>"$work/rows"
  grep -q "read from" "$work/err" || { cat "$work/err"; exit 1; }
  echo "none $(timed "$mirage" "${two_samples[@]}" --calibration none)" >>"$work/rows"
  echo "february $(timed "$mirage" "${february[@]}")" >>"$work/rows"
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print("episode", r["wall_seconds"], r["samples"])' "$work/out" >>"$work/rows"
  echo "hpc2n-first $(timed "$mirage" "${fidelity[@]}")" >>"$work/rows"
  echo "hpc2n-cached $(timed "$mirage" "${fidelity[@]}")" >>"$work/rows"
done

figure() { awk -v k="$1" -v c="$2" '$1 == k {print $c}' "$work/rows" | median; }
echo "$(date -u +%Y-%m-%dT%H:%M)Z, $(nproc) cores, $rounds rounds, medians (wall s / CPU s);" \
  "load average (1, 5, 15 min) $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after:"
printf '  %-58s %8s %8s\n' "" wall cpu
for k in peer first cached none; do
  case $k in
    peer) what="peer: Mirage's simulator, 2 samples x reactive+average" ;;
    first) what="mirage eval, the calibration inferred (empty cache)" ;;
    cached) what="mirage eval, the calibration read from the cache" ;;
    none) what="mirage eval --calibration none" ;;
  esac
  [ -n "$(figure $k 2)" ] && printf '  %-58s %8s %8s\n' "$what" "$(figure $k 2)" "$(figure $k 3)"
done
# Pair by pair, as the runs of a round ran side by side: the median of the peer's figure over
# mirage's, in column $2 (wall) or $3 (CPU).
speedup() {
  awk -v k="$1" -v c="$2" '$1 == "peer" {p[++n] = $c} $1 == k {m[++q] = $c}
    END {for (i = 1; i <= n && i <= q; i++) printf "%.0f\n", p[i] / m[i]}' "$work/rows" | median
}
# The February run: its own clock over the episodes (the replay forward between samples
# included, the reading and the cached calibration before them not), and the whole process's CPU
# (everything included) over the same episodes.
ep_wall="$(awk '$1 == "episode" {printf "%.3f\n", 1000 * $2 / ($3 * 2)}' "$work/rows" | median)"
ep_cpu="$(awk '$1 == "february" {cpu = $3} $1 == "episode" {printf "%.3f\n", 1000 * cpu / ($3 * 2)}' \
  "$work/rows" | median)"
# One line per target: the figure in wall and in CPU time, and whether each meets it.
met() { awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {
  ok = (op == ">=") ? v >= t : v < t; printf "%s", ok ? "met" : "NOT met" }'; }
target() {  # WHAT OP TARGET UNIT WALL CPU
  printf '  %-52s %9s %9s   %s %s%s   wall %s, CPU %s\n' "$1" "$5$4" "$6$4" "$2" "$3" "$4" \
    "$(met "$5" "$2" "$3")" "$(met "$6" "$2" "$3")"
}
printf '%-54s %9s %9s   %s\n' "targets (issue 59):" wall CPU target
if [ ${#peer[@]} -gt 0 ]; then
  target "eval over the peer, the calibration cached" ">=" 200 x \
    "$(speedup cached 2)" "$(speedup cached 3)"
  target "eval over the peer, first run (inferring)" ">=" 50 x "$(speedup first 2)" \
    "$(speedup first 3)"
else
  echo "  (the speed-ups over the peer need PEER_MIRAGE_GIT)"
fi
target "a calibrated LS6 8-node episode" "<" 1 " ms" "$ep_wall" "$ep_cpu"
target "HPC2N's replay with inference (first run)" "<" 2 " s" "$(figure hpc2n-first 2)" \
  "$(figure hpc2n-first 3)"
echo "  (the episode: February every 4 h, 2 policies, one thread, the calibration cached; wall by"
echo "  eval's own clock over the episodes, CPU the whole process's over the same episodes)"
printf '  HPC2N trace fidelity, the calibration cached: %s s wall, %s s CPU\n' \
  "$(figure hpc2n-cached 2)" "$(figure hpc2n-cached 3)"
