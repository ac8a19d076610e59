#!/usr/bin/env bash
# The daemon and the campaign CLI on a real local Slurm cluster (docs/daemon.md), through
# tests/slurm/cluster.sh. Phases:
#   chain    a 3-segment campaign (hand-off mode, `average` policy) under background load runs to
#            completion through the daemon and the CLI; every predecessor still running when
#            its successor started was stopped by the hand-off signal;
#   handoff  a 2-segment campaign on an idle cluster: the hand-off must happen;
#   kill     three campaigns while the daemon is SIGKILLed at random points and restarted many
#            times (plus self-inflicted kills right after an intent and right after a submission):
#            every campaign completes and no segment is ever submitted twice;
#   away     the daemon is away until Slurm purged a segment's record: its output file says it
#            ran and the chain goes on; with no trace it is held until `campaign settle`;
#   midadd   `campaign add` while the daemon is SIGKILLed: never two campaigns from one command;
#   ctld     slurmctld is stopped and restarted mid-run: the daemon backs off, reconnects and
#            the campaign completes;
#   garbage  random bytes, oversized lines, malformed and hostile requests and idle connections
#            on the control socket change nothing, and the daemon keeps serving;
#   script   a campaign added with no shape flag runs as its #SBATCH lines say (tasks, memory,
#            output file, time: scontrol show job), and a flag that contradicts one is named;
#   open     an open-ended campaign ends after the segment that created its done file;
#   retry    a segment that exits non-zero is run again, then the campaign fails saying why; a
#            script sbatch refuses fails its campaign with sbatch's own message.
#   tick     no daemon: a 3-segment campaign added on its store (`campaign add --config`) is
#            driven by repeated `mirage tick` alone, ticks SIGKILLed at random and run two at a
#            time; no segment is submitted twice. A tick on the daemon's store says the daemon
#            holds it and exits 0; slurmctld runs with ScronParameters=enable.
# "Submitted twice" is checked against the cluster's own record (jobcomp: one line per job that
# ended, by job name) and the daemon's intent log (one submission per segment).
#
#   tests/daemon/integration.sh --bin build/cli/mirage [--dir DIR] [--keep] [--phase NAME]...
#                               [--self-check]
# The kill and tick phases kill the program at its submission points: give them
# build/cli/mirage-with-faults, the build with the fault hooks (tests/support/FaultInjection.cpp).
# --self-check sneaks a second job named like a segment into the cluster during the kill and tick
# phases: the run must then FAIL, which shows the duplicate check has teeth.
#
# Needs root and the Slurm packages; exits 77 (skipped) without them.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cluster_sh="$root/tests/slurm/cluster.sh"
bin=""
dir="${MIRAGE_DAEMON_IT_DIR:-/tmp/mirage-daemon-it}"
keep=0
self_check=0
phases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --self-check) self_check=1; shift ;;
    --phase) phases+=("$2"); shift 2 ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "integration: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ ${#phases[@]} -gt 0 ] || phases=(chain handoff kill away midadd ctld garbage script open retry outlive tick)
[ -n "$bin" ] && [ -x "$bin" ] || { echo "integration: --bin must name the mirage binary" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

if [ "$(id -u)" -ne 0 ]; then echo "integration: SKIP (needs root)"; exit 77; fi
for b in slurmctld slurmd sbatch munged python3; do
  command -v "$b" >/dev/null || { echo "integration: SKIP ($b not installed)"; exit 77; }
done

# A cluster of our own: own directory and ports, so other test clusters on this machine do not
# collide with it.
export MIRAGE_SLURM_DIR="$dir/cluster"
export MIRAGE_SLURM_CTLD_PORT="${MIRAGE_DAEMON_IT_CTLD_PORT:-17817}"
export MIRAGE_SLURM_NODE_PORT="${MIRAGE_DAEMON_IT_NODE_PORT:-17901}"
export SLURM_CONF="$MIRAGE_SLURM_DIR/slurm.conf"
export TZ=UTC
jobcomp="$MIRAGE_SLURM_DIR/jobcomp.txt"
work="$dir/work"
sock="$dir/mirage.sock"
conf="$dir/daemon.toml"
log="$dir/daemon.log"
daemon_pid=""
load_pid=""
t_start=$SECONDS

note() { echo "integration [$((SECONDS - t_start))s]: $*"; }
fail() {
  echo "integration: FAIL: $*" >&2
  echo "---- tail of $log" >&2
  tail -n 40 "$log" >&2 || true
  exit 1
}

cleanup() {
  set +e
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
  [ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  if [ $keep -eq 0 ]; then "$cluster_sh" stop >/dev/null 2>&1; fi
}
trap cleanup EXIT

# munged is shared by every test cluster on the machine and another one's `stop` may end it:
# make sure it answers before talking to Slurm.
ensure_munge() {
  munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
  note "munged is not answering: starting it"
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged 2>/dev/null || true
  sleep 1
  munge -n | unmunge >/dev/null 2>&1 || fail "munged does not work"
}

# Through the daemon's socket, or with via_config set (the tick phase), on that config's store.
via_config=""
mirage() {
  if [ -n "$via_config" ]; then "$bin" "$@" --config "$via_config"; else "$bin" "$@" --socket "$sock"; fi
}

json_get() {  # json_get EXPR  (reads JSON on stdin; EXPR uses `d`)
  python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}

daemon_alive() { [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; }

start_daemon() {  # start_daemon [ENV=VALUE...]
  env "$@" "$bin" daemon --config "$conf" >>"$log" 2>&1 &
  daemon_pid=$!
}

wait_daemon_up() {  # by the clock: each `mirage` call itself may take a second on a slow machine
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    if mirage status --json >/dev/null 2>&1; then return 0; fi
    daemon_alive || return 1
    sleep 0.1
  done
  return 1
}

kill_daemon() {
  if daemon_alive; then kill -KILL "$daemon_pid" 2>/dev/null || true; fi
  [ -n "$daemon_pid" ] && { wait "$daemon_pid" 2>/dev/null || true; }
  daemon_pid=""
}

add_campaign() {  # add_campaign NAME SEGMENTS SCRIPT [extra flags...] -> prints the id
  local name="$1" segs="$2" script="$3"
  shift 3
  (cd "$work" && mirage campaign add --name "$name" --script "$script" --segments "$segs" \
    --nodes 1 --gpus-per-node 4 --time 1 --no-export-env --json "$@") | json_get 'd["id"]'
}

state_of() { mirage campaign show "$1" --json | json_get 'd["state"]'; }

wait_state() {  # wait_state TIMEOUT ID STATE: until campaign ID is in STATE (fails on another end)
  local timeout="$1" id="$2" want="$3" s
  local deadline=$((SECONDS + timeout))
  while :; do
    s="$(state_of "$id" 2>/dev/null || echo unknown)"
    [ "$s" = "$want" ] && return 0
    case "$s" in done | failed | cancelled) mirage campaign show "$id" >&2 || true; fail "campaign $id is $s, not $want" ;; esac
    [ $SECONDS -lt $deadline ] || { mirage campaign show "$id" >&2 || true; fail "campaign $id not $want after ${timeout}s"; }
    sleep 1
  done
}

job_of_segment() {  # job_of_segment ID K: waits for segment K's job id
  local deadline=$((SECONDS + 60)) job
  while :; do
    job="$(mirage campaign show "$1" --json | json_get "d['segment_list'][$2]['job_id'] if len(d['segment_list']) > $2 else 0")"
    [ "$job" -gt 0 ] && { echo "$job"; return 0; }
    [ $SECONDS -lt $deadline ] || fail "campaign $1 segment $2 was not submitted"
    sleep 0.5
  done
}

wait_done() {  # wait_done TIMEOUT ID...
  local timeout="$1" id s all
  shift
  local deadline=$((SECONDS + timeout))
  while :; do
    all=1
    for id in "$@"; do
      s="$(state_of "$id" 2>/dev/null || echo unknown)"
      case "$s" in
        done) ;;
        failed | cancelled) mirage campaign show "$id" >&2 || true; fail "campaign $id is $s" ;;
        *) all=0 ;;
      esac
    done
    [ $all -eq 1 ] && return 0
    [ $SECONDS -lt $deadline ] || { for id in "$@"; do mirage campaign show "$id" >&2 || true; done; fail "campaigns $* not done after ${timeout}s"; }
    sleep 1
  done
}

# A segment's job in jobcomp: the campaign's name, the segment and the store id (NAME-sK-<8 hex>),
# or no store id (NAME-sK: a job under the name of before, such as the self-checks' strays).
segment_job() {  # segment_job NAME K -> a grep pattern
  echo " Name=$1-s$2\(-[0-9a-f]\{8\}\)\? "
}

# Exactly one job per segment: in the cluster's job completion log (by name) and in the
# daemon's intent log.
check_exactly_once() {  # check_exactly_once ID NAME SEGMENTS [SUBMISSIONS (default SEGMENTS)]
  local id="$1" name="$2" segs="$3" subs="${4:-$3}" k n
  sleep 3  # jobcomp is written as jobs are purged
  for ((k = 0; k < segs; k++)); do
    n="$(grep -c "$(segment_job "$name" "$k")" "$jobcomp" || true)"
    [ "$n" -eq 1 ] || { grep " Name=$name-s" "$jobcomp" >&2 || true; fail "campaign $id segment $k ran as $n jobs in Slurm (expected 1)"; }
  done
  n="$(mirage campaign show "$id" --json | json_get 'len(d["submissions"])')"
  [ "$n" -eq "$subs" ] || fail "campaign $id has $n submissions in its intent log (expected $subs)"
  n="$(mirage campaign show "$id" --json | json_get 'sum(1 for s in d["submissions"] if s["state"] != "submitted")')"
  [ "$n" -eq 0 ] || fail "campaign $id has $n unsettled submissions"
}

# Hand-off, checked against Slurm's record: every predecessor still running when its successor
# started must have been stopped by the signal (its output says so). Prints how many were. A
# predecessor that ended on its own within one poll of the successor's start (the daemon sees
# the start at its next poll; Slurm's record has whole seconds) may have beaten the signal: one
# such case, seen once, ended 1 s after its successor started.
handoff_slack_s=2  # the poll interval (1 s, above) plus the record's one-second resolution
check_handoffs() {  # check_handoffs ID NAME SEGMENTS
  local id="$1" name="$2" segs="$3" k out pred_end succ_start pred_job n=0
  for ((k = 0; k + 1 < segs; k++)); do
    pred_end="$(grep "$(segment_job "$name" "$k")" "$jobcomp" | sed -n 's/.* EndTime=\([^ ]*\).*/\1/p')"
    succ_start="$(grep "$(segment_job "$name" $((k + 1)))" "$jobcomp" | sed -n 's/.* StartTime=\([^ ]*\).*/\1/p')"
    pred_job="$(grep "$(segment_job "$name" "$k")" "$jobcomp" | sed -n 's/.*JobId=\([0-9]*\).*/\1/p')"
    out="$work/slurm-$pred_job.out"
    # Not "<": a predecessor signalled at once may end within its successor's starting second.
    if [[ ! "$pred_end" < "$succ_start" ]]; then
      if grep -q "hand-off signal" "$out" 2>/dev/null; then
        n=$((n + 1))
      elif (($(date -d "$pred_end" +%s) - $(date -d "$succ_start" +%s) > handoff_slack_s)); then
        fail "campaign $id segment $k ran until $pred_end although segment $((k + 1)) started at $succ_start: no hand-off signal"
      fi
    fi
  done
  echo "$n"
}

background_load() {  # keeps a few jobs of other users' kind queued
  while :; do
    local pending
    pending="$(squeue -h -t PD -n load 2>/dev/null | wc -l || echo 0)"
    if [ "$pending" -lt 2 ]; then
      sbatch -Q -J load -N $((1 + RANDOM % 2)) -t 1 -o /dev/null --wrap "sleep $((5 + RANDOM % 10))" \
        >/dev/null 2>&1 || true
    fi
    sleep 2
  done
}

# ------------------------------------------------------------------------------------- setup
rm -rf "$dir"
mkdir -p "$dir" "$work"
ensure_munge
"$cluster_sh" start >"$dir/cluster.log" 2>&1 || { cat "$dir/cluster.log" >&2; fail "the Slurm cluster did not start"; }
ensure_munge
note "cluster up (SLURM_CONF=$SLURM_CONF)"

cat >"$conf" <<CONF
[cluster]
backend = "slurm"
slurm_conf = "$SLURM_CONF"
partition = "gpu"
[poll]
interval = 1
cluster_every = "10s"
backoff_max = 4
[store]
path = "$dir/store.db"
[socket]
path = "$sock"
max_request_bytes = 65536
max_clients = 16
idle_timeout = "5s"
[policy]
default = "average"
decision_interval = 2
fallback_lead = 30
[guard]
max_campaigns_per_user = 50
max_retries = 2
retry_delay = 2
[handoff]
signal = "USR1"
grace = "5s"
[log]
level = "info"
CONF
checked="$("$bin" daemon --config "$conf" --check)" || fail "the daemon config does not check"

# The Slurm release: --version names the one the program was built for, --check the controller's.
release="$(slurmctld -V | awk '{ print $2 }')"
version="$("$bin" --version)"
[[ "$version" == *"(built for Slurm ${release%.*}."* ]] ||
  fail "mirage --version does not name Slurm ${release%.*} (slurmctld -V: $release): $version"
[[ "$checked" == *"slurmctld $release)"* ]] ||
  fail "daemon --check does not name slurmctld's release $release: $checked"
# A controller that does not answer: one line and a non-zero exit from --check and tick, and the
# tick's store is never created.
mkdir -p "$dir/away"
sed -e 's/^SlurmctldPort=.*/SlurmctldPort=1/' -e '$a MessageTimeout=2' "$SLURM_CONF" >"$dir/away.conf"
sed -e "s|^slurm_conf = .*|slurm_conf = \"$dir/away.conf\"|" \
  -e "s|^path = \"$dir/store.db\"|path = \"$dir/away/store.db\"|" "$conf" >"$dir/away.toml"
for cmd in "daemon --check" tick; do
  rc=0
  # shellcheck disable=SC2086
  "$bin" $cmd --config "$dir/away.toml" >"$dir/away.out" 2>&1 || rc=$?
  [ $rc -ne 0 ] && [ "$(wc -l <"$dir/away.out")" -eq 1 ] && grep -q "does not answer" "$dir/away.out" ||
    fail "$cmd with slurmctld away: exit $rc, expected one line saying it does not answer: $(cat "$dir/away.out")"
done
[ ! -e "$dir/away/store.db" ] || fail "a tick with slurmctld away created its store"
note "releases: $version; slurmctld $release; a controller away is one line"

# A segment: trains (sleeps) until its time is up or the hand-off signal comes.
cat >"$work/segment.sh" <<'SCRIPT'
#!/bin/bash
echo "campaign $MIRAGE_CAMPAIGN_ID segment $MIRAGE_SEGMENT attempt $MIRAGE_ATTEMPT job $SLURM_JOB_ID"
trap 'echo "hand-off signal: checkpoint and exit"; exit 0' USR1
sleep "${SEGMENT_SECONDS:-20}" &
wait
SCRIPT
sed 's/SEGMENT_SECONDS:-20/SEGMENT_SECONDS:-45/' "$work/segment.sh" >"$work/long.sh"
sed 's/SEGMENT_SECONDS:-20/SEGMENT_SECONDS:-6/' "$work/segment.sh" >"$work/short.sh"
sed 's/SEGMENT_SECONDS:-20/SEGMENT_SECONDS:-15/' "$work/segment.sh" >"$work/medium.sh"

# A user's own batch script: the shape is in its #SBATCH lines, none on `campaign add`.
cat >"$work/directives.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --mem=100M
#SBATCH --output=logs/seg-%j.txt
#SBATCH --time=2
echo "segment $MIRAGE_SEGMENT: $SLURM_NTASKS tasks, $SLURM_MEM_PER_NODE MB"
sleep 15
SCRIPT
# Open-ended: the third segment finds the work finished and creates the done file.
cat >"$work/open.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --time=1
#SBATCH --output=logs/open-%j.txt
echo "segment $MIRAGE_SEGMENT, done file $MIRAGE_DONE_FILE"
sleep 3
if [ "$MIRAGE_SEGMENT" -ge 2 ]; then touch "$MIRAGE_DONE_FILE"; fi
SCRIPT
cat >"$work/crash.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --time=1
#SBATCH --output=logs/crash-%j.txt
echo "segment $MIRAGE_SEGMENT attempt $MIRAGE_ATTEMPT: crashing"
exit 3
SCRIPT
cat >"$work/refused.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH --partition=no-such-partition
#SBATCH --time=1
true
SCRIPT
mkdir -p "$work/logs"

start_daemon
wait_daemon_up || fail "the daemon did not come up"
note "daemon up"
# The forecast ranks the queue with the controller's own weights (cluster.sh: job size 1000).
for _ in $(seq 1 20); do grep -q "priority weights" "$log" && break; sleep 0.5; done
grep -q "priority weights: age 0 (max age [^)]*), job size 1000" "$log" ||
  fail "the daemon did not read the priority weights from slurmctld: $(grep 'priority weights' "$log")"
note "daemon read the priority weights"
# Node states reach the forecast: an idle node drained is out of the plan (`mirage forecast`
# reports what it knew of the partition beside each job, even one it cannot find).
node="$(sinfo -h -N -p gpu -t idle -o %N | head -n 1)"
scontrol update nodename="$node" state=drain reason=mirage-integration
# and a reservation for someone else, an hour from now, is planned around.
scontrol create reservationname=mirage-it starttime=now+1hour duration=60 nodes="$node" \
  users=nobody >/dev/null
seen="$("$bin" forecast --config "$conf" --job 999999 --json |
  json_get '"%d %d" % (d[0]["cluster"]["unavailable_nodes"], d[0]["cluster"]["reservations"])')" || true
scontrol update nodename="$node" state=resume
scontrol delete reservationname=mirage-it
[ "$seen" = "1 1" ] ||
  fail "the drained idle node $node and the reservation to come were not both in the plan: '$seen'"
note "forecast: the drained node $node is out of the plan, the reservation to come in it"

for phase in "${phases[@]}"; do
  ensure_munge
  case "$phase" in
    chain)
      # Segments would run 45 s of their 1-minute limit; the successor is submitted at the latest
      # 30 s before the limit, so it starts while the predecessor runs: the hand-off signal
      # must stop the predecessor.
      note "chain: 3 segments under background load, hand-off mode"
      background_load &
      load_pid=$!
      # What slurmctld reports of pending jobs reaches the snapshot: a held job and one waiting
      # on it are counted as such (their reasons, JobHeldUser and Dependency), not as competitors.
      held="$(sbatch --parsable -H -J probe-held -p gpu -t 1 -o /dev/null --wrap 'sleep 1')"
      dependent="$(sbatch --parsable -d "afterany:$held" -J probe-dep -p gpu -t 1 -o /dev/null --wrap 'sleep 1')"
      deadline=$((SECONDS + 20))
      until states="$(mirage status --json | json_get 'd["queue"]["pending_by_state"]')" &&
        [ "$(mirage status --json | json_get 'd["queue"]["pending_by_state"].get("held", 0) == 1 and d["queue"]["pending_by_state"].get("dependency", 0) == 1')" = True ]; do
        [ $SECONDS -lt $deadline ] || fail "chain: the daemon's snapshot does not show the held and the dependent job: $states"
        sleep 1
      done
      # `mirage forecast` gives neither a start: they cannot start as they are.
      forecasts="$("$bin" forecast --config "$conf" --job "$held" --job "$dependent" --json |
        json_get '",".join("%s:%s" % (x.get("state"), x.get("reported_start")) for x in d)')"
      [ "$forecasts" = "held:None,dependency:None" ] ||
        fail "chain: mirage forecast of the held and the dependent job: $forecasts"
      scancel "$held" "$dependent"
      note "chain: pending jobs by slurmctld's reasons: $states; forecast: $forecasts"
      sleep 6
      id="$(add_campaign chain 3 long.sh --overlap handoff --policy average)"
      wait_done 240 "$id"
      kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null || true
      load_pid=""
      check_exactly_once "$id" chain 3
      # Under load a successor may queue past its predecessor's end; then there is nothing to
      # hand off. Where it started earlier, the predecessor must have been signalled.
      handoffs="$(check_handoffs "$id" chain 3)" || exit 1
      note "chain: $handoffs of 2 predecessors were still running at their successor's start and were stopped by the hand-off signal"
      note "chain: done; $(mirage campaign show "$id" --json | json_get '", ".join("seg %d job %d waited %ds" % (s["index"], s["job_id"], s["start_time"] - s["submit_time"]) for s in d["segment_list"])')"
      # Each decision asked slurmctld's will-run test for the next segment (slurm_job_will_run2);
      # the next decision recorded its answer: a start time no earlier than the question.
      estimates="$(mirage campaign show "$id" --json | json_get 'sum(1 for x in d["decisions"] if x["slurm_start"] >= x["time"] - 60)')"
      [ "$estimates" -ge 10 ] ||
        fail "chain: no decision recorded Slurm's will-run estimate: $(mirage campaign show "$id" --json | json_get '[(x["action"], x["slurm_start"], x["slurm_note"]) for x in d["decisions"]]')"
      note "chain: $estimates of the last decisions recorded Slurm's estimate of the next segment's start"
      ;;
    kill)
      note "kill: 3 campaigns while the daemon is SIGKILLed and restarted"
      ids=()
      for c in k1 k2 k3; do ids+=("$(add_campaign "$c" 3 short.sh --policy reactive)"); done
      restarts=0
      faults=0
      for ((round = 0; round < 60 && restarts < 25; round++)); do
        if ! daemon_alive; then
          [ -n "$daemon_pid" ] && { wait "$daemon_pid" 2>/dev/null || true; faults=$((faults + 1)); }
          start_daemon MIRAGE_FAULT_AFTER_INTENT=0.2 MIRAGE_FAULT_AFTER_SUBMIT=0.2
          restarts=$((restarts + 1))
        fi
        sleep "$(python3 -c 'import random; print(round(random.uniform(0.2, 2.5), 2))')"
        if daemon_alive && [ $((RANDOM % 3)) -ne 0 ]; then
          kill_daemon
        fi
      done
      kill_daemon
      if [ $self_check -eq 1 ]; then
        note "self-check: submitting a stray job named k1-s1 behind the daemon's back"
        sbatch -Q -J k1-s1 -t 1 -o /dev/null --wrap "sleep 1" >/dev/null
      fi
      start_daemon
      wait_daemon_up || fail "the daemon did not come up after the kill loop"
      note "kill: $restarts restarts ($faults self-inflicted kills at submission points); waiting for completion"
      wait_done 180 "${ids[@]}"
      for i in 0 1 2; do check_exactly_once "${ids[$i]}" "k$((i + 1))" 3; done
      note "kill: all done, each segment submitted once ($(grep -c 'adopted job' "$log" || true) jobs adopted by tag and $(grep -c 'submitting it again' "$log" || true) intents submitted again after restarts)"
      ;;
    away)
      # The daemon is away longer than a segment's run plus MinJobAge (2 s here): when it comes
      # back Slurm has purged the segment's record. Its output file shows it ran, so the next
      # segment follows; a segment whose output goes to /dev/null cannot be known (no accounting
      # on this cluster) and is held until the user says, never run twice.
      note "away: the daemon SIGKILLed while a segment waits, back after Slurm purged its record"
      cat >"$work/away.sh" <<'SCRIPT'
#!/bin/bash
echo "segment $MIRAGE_SEGMENT attempt $MIRAGE_ATTEMPT job $SLURM_JOB_ID"
sleep 5
SCRIPT
      sed 's|^#!/bin/bash$|#!/bin/bash\n#SBATCH --output=/dev/null|' "$work/away.sh" >"$work/away-silent.sh"
      block_cluster() {  # the whole cluster busy for 8 s: a segment submitted now waits
        local blocker
        blocker="$(sbatch --parsable -J blocker -N 4 --exclusive -t 1 -o /dev/null --wrap 'sleep 8')"
        local deadline=$((SECONDS + 30))
        until [ "$(squeue -h -j "$blocker" -o %T 2>/dev/null)" = RUNNING ]; do
          [ $SECONDS -lt $deadline ] || fail "away: the blocking job did not start"
          sleep 0.5
        done
      }
      away_once() {  # away_once ID: kills the daemon once it saw segment 0 pending, restarts it when purged
        local job
        job="$(job_of_segment "$1" 0)"
        sleep 2  # a dump reports the job pending, and its output file, to the daemon
        [ "$(squeue -h -j "$job" -o %T)" = PENDING ] || fail "away: job $job is not pending behind the blocker"
        kill_daemon
        local deadline=$((SECONDS + 60))
        while scontrol show job "$job" >/dev/null 2>&1; do
          [ $SECONDS -lt $deadline ] || fail "away: job $job was not purged within 60 s"
          sleep 1
        done
        start_daemon
        wait_daemon_up || fail "away: the daemon did not come back"
      }
      block_cluster
      id="$(add_campaign away 2 away.sh --policy reactive --fallback-chain off)"
      away_once "$id"
      wait_done 120 "$id"
      check_exactly_once "$id" away 2
      grep -q "campaign $id segment 0: job [0-9]* ended while mirage was not looking; its output file .* shows it started" "$log" ||
        fail "away: the daemon did not settle segment 0 by its output file"
      mirage campaign show "$id" | grep -q "^  totals     makespan .* interruption .* GPU-hours charged" ||
        fail "away: campaign show gives a finished campaign no totals: $(mirage campaign show "$id" | tail -3)"
      block_cluster
      id="$(add_campaign silent 2 away-silent.sh --policy reactive --fallback-chain off)"
      away_once "$id"
      deadline=$((SECONDS + 30))
      until [ "$(mirage campaign show "$id" --json | json_get '"fate_unknown_since" in d["segment_list"][0]')" = True ]; do
        [ $SECONDS -lt $deadline ] || fail "away: segment 0 of campaign $id is not held as unknown"
        sleep 1
      done
      sleep 5  # several polls: nothing may be submitted meanwhile
      n="$(mirage campaign show "$id" --json | json_get 'len(d["submissions"])')"
      [ "$n" -eq 1 ] || fail "away: a segment whose fate is unknown was submitted again ($n submissions)"
      mirage campaign show "$id" | grep -q "unknown" || fail "away: campaign show does not name the held segment"
      mirage status | grep -q "^held " || fail "away: mirage status does not name the held segment"
      mirage campaign settle "$id" --segment 0 --ran >/dev/null || fail "away: campaign settle failed"
      wait_done 120 "$id"
      check_exactly_once "$id" silent 2
      note "away: a segment that ran unseen was settled by its output file; one that left no trace was held until settled; each ran once"
      ;;
    midadd)
      # `campaign add` while the daemon is SIGKILLed 0-49 ms into it: the client falls back to the
      # store with the same request key, so one command makes at most one campaign, and one that
      # says it succeeded made exactly one.
      note "midadd: the daemon SIGKILLed during campaign add, 12 times"
      made=0
      : >"$dir/midadd.all"
      for try in $(seq 1 12); do
        (cd "$work" && "$bin" campaign add --config "$conf" --name "midadd-$try" --script short.sh \
          --segments 1 --nodes 1 --time 1 --no-export-env --json >"$dir/midadd.out" 2>&1
         echo $? >"$dir/midadd.rc"; cat "$dir/midadd.out" >>"$dir/midadd.all") &
        add_pid=$!
        sleep "0.0$((RANDOM % 5))"
        kill_daemon
        wait "$add_pid" || true
        start_daemon
        wait_daemon_up || fail "midadd: the daemon did not come back"
        n="$(mirage campaign list --json | json_get "sum(1 for c in d if c['name'] == 'midadd-$try')")"
        [ "$n" -le 1 ] || fail "midadd: one campaign add made $n campaigns: $(cat "$dir/midadd.out")"
        if [ "$(cat "$dir/midadd.rc")" = 0 ]; then
          [ "$n" -eq 1 ] || fail "midadd: campaign add said it succeeded but made $n campaigns"
        fi
        made=$((made + n))
      done
      fallbacks="$(grep -c "used the store" "$dir/midadd.all" || true)"
      retried="$(grep -c "already added campaign" "$dir/midadd.all" || true)"
      note "midadd: 12 adds under SIGKILL made $made campaigns, none twice ($fallbacks went to the store after the daemon died, $retried of them found the campaign the daemon had saved)"
      ;;
    ctld)
      note "ctld: slurmctld stopped and restarted mid-run"
      id="$(add_campaign ctld 3 medium.sh --policy reactive)"
      deadline=$((SECONDS + 60))
      until [ "$(mirage campaign show "$id" --json | json_get 'd["segment_list"][0]["state"]')" = running ]; do
        [ $SECONDS -lt $deadline ] || fail "segment 0 did not start"
        sleep 0.5
      done
      ctld_pid="$(cat "$MIRAGE_SLURM_DIR/run/slurmctld.pid")"
      kill -TERM "$ctld_pid"
      while kill -0 "$ctld_pid" 2>/dev/null; do sleep 0.2; done
      sleep 12
      reach="$(mirage status --json | json_get 'd["controller_reachable"]')"
      [ "$reach" = False ] || fail "the daemon did not notice slurmctld was down"
      mirage status | grep -q UNREACHABLE || fail "mirage status does not say the controller is unreachable"
      slurmctld -f "$SLURM_CONF" -i || fail "slurmctld did not restart"
      note "ctld: slurmctld restarted"
      wait_done 180 "$id"
      check_exactly_once "$id" ctld 3
      grep -q "reachable again" "$log" || fail "the daemon never logged the controller coming back"
      ;;
    garbage)
      note "garbage: hostile input on the control socket"
      before="$(mirage campaign list --json | json_get '[(c["id"], c["state"], c["done"]) for c in d]')"
      pid_before="$daemon_pid"
      python3 - "$sock" <<'PY' || fail "the garbage client failed"
import json, os, random, socket, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(10)
    return s
def reply(s):
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
rnd = random.Random(7)
# Random bytes with and without newlines; hang up at once.
for i in range(50):
    s = conn()
    s.sendall(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 4000))))
    s.close()
# Malformed and hostile requests: each gets an error reply.
bad = [b"{", b"null", b"[1,2]", b"{\"op\":\"fly\"}", b"{\"op\":\"cancel\",\"id\":999999}",
       b"{\"op\":\"cancel\",\"id\":\"1; rm -rf /\"}", b"{\"op\":\"add\",\"campaign\":{\"name\":1}}",
       b"{\"op\":\"show\",\"id\":1e400}", b"\xff\xfe\xfd", b"{\"op\":\"list\",\"x\":" + b"[" * 5000 + b"\n"]
s = conn()
for b in bad:
    s.sendall(b + b"\n")
    r = json.loads(reply(s))
    assert r["ok"] is False and r["error"], (b[:40], r)
s.close()
# Oversized: 200 KiB without a newline.
s = conn()
try:
    s.sendall(b"x" * 200000)
except OSError:
    pass
r = reply(s)
assert b"too large" in r, r
s.close()
# Idle connections and a burst of clients.
idle = [conn() for _ in range(5)]
for _ in range(100):
    s = conn()
    s.sendall(b"{\"op\":\"ping\"}\n")
    reply(s)
    s.close()
for s in idle:
    s.close()
print("garbage: all hostile input answered or dropped")
PY
      daemon_alive || fail "the daemon died on garbage input"
      [ "$daemon_pid" = "$pid_before" ] || fail "the daemon restarted"
      after="$(mirage campaign list --json | json_get '[(c["id"], c["state"], c["done"]) for c in d]')"
      [ "$before" = "$after" ] || fail "garbage changed the campaigns: $before -> $after"
      errors="$(mirage status --json | json_get 'd["control_errors"]')"
      note "garbage: daemon still serving, campaigns unchanged ($errors error replies)"
      ;;
    handoff)
      # No load: the successor, submitted 30 s before the limit, starts at once while its
      # predecessor still has about 15 s to run, so a hand-off must happen.
      note "handoff: 2 segments on an idle cluster"
      id="$(add_campaign handoff 2 long.sh --overlap handoff --policy average)"
      wait_done 180 "$id"
      check_exactly_once "$id" handoff 2
      handoffs="$(check_handoffs "$id" handoff 2)" || exit 1
      [ "$handoffs" -eq 1 ] || fail "the predecessor was not running when its successor started: no hand-off to check"
      note "handoff: the predecessor stopped on the signal"
      ;;
    script)
      note "script: a campaign shaped by its #SBATCH lines alone"
      out="$(cd "$work" && mirage campaign add --name shaped --script directives.sh --segments 1 --no-export-env)"
      echo "$out" | sed 's/^/  | /'
      grep -q "shape      1 node(s) x 0 GPU(s), limit 2m, partition gpu" <<<"$out" ||
        fail "campaign add did not print the script's shape back"
      id="$(sed -n "s/^campaign \([0-9]*\) 'shaped' added.*/\1/p" <<<"$out")"
      job="$(job_of_segment "$id" 0)"
      record="$(scontrol show job "$job")" || fail "scontrol show job $job failed"
      for want in "NumTasks=2" "MinMemoryNode=100M" "StdOut=$work/logs/seg-$job.txt" "TimeLimit=00:02:00" "Comment=mirage:"; do
        grep -q "$want" <<<"$record" || { echo "$record" >&2; fail "job $job lacks $want: the script's directives did not apply"; }
      done
      wait_done 120 "$id"
      grep -q "segment 0: 2 tasks, 100 MB" "$work/logs/seg-$job.txt" ||
        fail "the segment's output is not in logs/seg-$job.txt as its script says"
      [ "$(mirage campaign show "$id" --json | json_get 'd["shape_granted"] and d["time_limit"] == 120')" = True ] ||
        fail "the shape Slurm granted was not recorded"
      # A flag that contradicts a directive wins, and says so.
      out="$(cd "$work" && mirage campaign add --name flagged --script directives.sh --segments 1 --time 3 --no-export-env --json)"
      grep -q "overrides '#SBATCH --time=2' ($work/directives.sh:6): the flag wins" <<<"$out" ||
        fail "campaign add did not say that --time overrides the script: $out"
      id="$(json_get 'd["id"]' <<<"$out")"
      job="$(job_of_segment "$id" 0)"
      scontrol show job "$job" | grep -q "TimeLimit=00:03:00" || fail "--time did not override #SBATCH --time"
      mirage campaign cancel "$id" >/dev/null
      note "script: NumTasks=2, MinMemoryNode=100M, StdOut=logs/seg-$job.txt from the script; the flag overrides its --time"
      ;;
    open)
      note "open: an open-ended campaign until a segment creates its done file"
      id="$(cd "$work" && mirage campaign add --name open --script open.sh --no-export-env --policy reactive --json | json_get 'd["id"]')"
      wait_done 180 "$id"
      show="$(mirage campaign show "$id" --json)"
      # With the fallback chain a fourth segment waits behind the third: cancelled once the done
      # file is there (before it starts, or as soon as Slurm started it), it runs nothing.
      ran="$(json_get 'sum(1 for s in d["segment_list"] if s["start_time"] >= 0 and not s.get("message", "").startswith("cancelled"))' <<<"$show")"
      [ "$ran" -eq 3 ] || fail "the open-ended campaign ran $ran segments, not 3"
      [ "$(json_get 'len(d["submissions"])' <<<"$show")" -le 4 ] || fail "the open-ended campaign submitted more than its 3 segments and one held behind them"
      json_get 'd["message"]' <<<"$show" | grep -q "^segment 2 created the done file " ||
        fail "the campaign does not say which segment ended it: $(json_get 'd["message"]' <<<"$show")"
      check_exactly_once "$id" open 3 "$(json_get 'len(d["submissions"])' <<<"$show")"
      note "open: done after segment 2 created $(json_get 'd["done_file"]' <<<"$show")"
      ;;
    retry)
      note "retry: a segment that exits 3 runs twice, then its campaign fails saying why"
      # Without the fallback chain: the same segment again (with it, the successor queued behind
      # carries on; the outlive phase pins that).
      id="$(cd "$work" && mirage campaign add --name crash --script crash.sh --segments 2 --max-retries 1 --fallback-chain off --no-export-env --json | json_get 'd["id"]')"
      wait_state 120 "$id" failed
      show="$(mirage campaign show "$id" --json)"
      msg="$(json_get 'd["message"]' <<<"$show")"
      [[ "$msg" == "segment 0 failed after 2 attempts: job "*" ended FAILED, exit code 3" ]] ||
        fail "the failed campaign does not say why: '$msg'"
      [ "$(json_get 'len(d["submissions"])' <<<"$show")" -eq 2 ] || fail "segment 0 was not submitted exactly twice"
      # Why, in words: each submission's reason, and how its job ended.
      shown="$(mirage campaign show "$id")"
      [ "$(grep -c -- "-> job [0-9]* ended FAILED, exit code 3" <<<"$shown")" -eq 2 ] &&
        grep -q "segment 0 attempt 1, .*: first segment" <<<"$shown" &&
        grep -q "segment 0 attempt 2, .*: again after attempt 1" <<<"$shown" ||
        { echo "$shown" >&2; fail "campaign show does not say why each attempt was made and how it ended"; }
      note "retry: $msg"
      id="$(cd "$work" && mirage campaign add --name refused --script refused.sh --segments 1 --max-retries 0 --no-export-env --json | json_get 'd["id"]')"
      wait_state 60 "$id" failed
      msg="$(mirage campaign show "$id" --json | json_get 'd["message"]')"
      grep -q "sbatch: error: Batch job submission failed: Invalid partition name specified" <<<"$msg" ||
        fail "a refusal does not carry sbatch's message: '$msg'"
      [ "$(mirage campaign show "$id" --json | json_get 'len(d["submissions"])')" -eq 1 ] ||
        fail "the refusal was submitted again although --max-retries is 0"
      note "retry: refused once with sbatch's own message: $msg"
      ;;
    outlive)
      note "outlive: the successor waits behind the running segment; released early by the fallback lead"
      id="$(add_campaign outlive 3 long.sh --policy reactive --fallback-chain on)"
      job0="$(job_of_segment "$id" 0)"
      job1="$(job_of_segment "$id" 1)"
      scontrol show job "$job1" | grep -q "Dependency=afterany:$job0" ||
        { scontrol show job "$job1" >&2; fail "segment 1 (job $job1) is not queued behind job $job0"; }
      # 45 s segments of a 1-minute limit, fallback_lead 30 s: mirage releases job1 about 30 s
      # into job0, through libslurm, and it starts while job0 still runs.
      deadline=$((SECONDS + 90))
      until [ "$(squeue -h -j "$job1" -o %T 2>/dev/null)" = RUNNING ]; do
        [ $SECONDS -lt $deadline ] || { scontrol show job "$job1" >&2; fail "job $job1 was not released"; }
        sleep 0.5
      done
      [ "$(squeue -h -j "$job0" -o %T 2>/dev/null)" = RUNNING ] ||
        fail "job $job1 started only after job $job0 ended: the release did not reach Slurm"
      mirage campaign show "$id" --json | json_get 'd["submissions"][1]["reason"]' | grep -q "released: fallback" ||
        fail "segment 1's reason does not say it was released"
      note "outlive: job $job1 released and running beside job $job0"
      # Segment 2 waits behind segment 1. The daemon goes away: Slurm starts segment 2 when
      # segment 1 ends, with no daemon.
      job2="$(job_of_segment "$id" 2)"
      scontrol show job "$job2" | grep -q "Dependency=afterany:$job1" ||
        fail "segment 2 (job $job2) is not queued behind job $job1"
      kill_daemon
      deadline=$((SECONDS + 120))
      until [ "$(squeue -h -j "$job2" -o %T 2>/dev/null)" = RUNNING ]; do
        [ $SECONDS -lt $deadline ] || { scontrol show job "$job2" >&2; fail "job $job2 did not start without the daemon"; }
        sleep 1
      done
      note "outlive: with no daemon, job $job2 started when job $job1 ended"
      start_daemon
      wait_daemon_up || fail "the daemon did not come up again"
      wait_done 120 "$id"
      check_exactly_once "$id" outlive 3
      note "outlive: done, one job per segment"
      ;;
    tick)
      note "tick: a 3-segment campaign driven by \`mirage tick\` alone, ticks SIGKILLed at random"
      scontrol show config | grep -q "^ScronParameters *= enable" ||
        fail "slurmctld does not run with ScronParameters=enable (scrontab)"
      # The daemon holds its store: a tick there says so in one line and exits 0.
      out="$("$bin" tick --config "$conf" 2>>"$log")" || fail "a tick on the daemon's store exited $?"
      [ "$out" = "mirage tick: store $dir/store.db is in use by pid $daemon_pid (mirage daemon); it makes the pass, nothing to do" ] ||
        fail "a tick on the daemon's store did not say the daemon holds it: '$out'"
      # A store of its own, no daemon on it: its socket is never bound.
      tconf="$dir/tick.toml"
      sed -e "s|^path = \"$dir/store.db\"|path = \"$dir/tick/store.db\"|" \
        -e "s|^path = \"$sock\"|path = \"$dir/tick/mirage.sock\"|" "$conf" >"$tconf"
      grep -q "$dir/tick/store.db" "$tconf" && grep -q "$dir/tick/mirage.sock" "$tconf" ||
        fail "could not make the tick config"
      via_config="$tconf"
      id="$(cd "$work" && mirage campaign add --name ticked --script short.sh --segments 3 --nodes 1 \
        --gpus-per-node 4 --time 1 --no-export-env --policy reactive --json 2>"$dir/tick-add.err" |
        json_get 'd["id"]')" || { cat "$dir/tick-add.err" >&2; fail "campaign add --config without a daemon failed"; }
      grep -q "no daemon at $dir/tick/mirage.sock; used the store $dir/tick/store.db directly" "$dir/tick-add.err" ||
        fail "campaign add did not say it used the store: $(cat "$dir/tick-add.err")"
      ticks=0 kills=0 refused=0
      deadline=$((SECONDS + 300))
      while [ "$(state_of "$id" 2>/dev/null || echo unknown)" != done ]; do
        [ $SECONDS -lt $deadline ] || { mirage campaign show "$id" >&2 || true; fail "the ticked campaign is not done after 300s"; }
        # A pass takes some 20-50 ms here: the kill comes within it, or the tick kills itself
        # right after its intent or right after sbatch (the daemon's fault hooks).
        MIRAGE_FAULT_AFTER_INTENT=0.3 MIRAGE_FAULT_AFTER_SUBMIT=0.3 \
          "$bin" tick --config "$tconf" >>"$dir/tick.out" 2>>"$dir/tick.log" &
        t1=$!
        t2=""
        if [ $((RANDOM % 4)) -eq 0 ]; then  # two at once: one of them must stand aside
          "$bin" tick --config "$tconf" >>"$dir/tick.out" 2>>"$dir/tick.log" &
          t2=$!
        fi
        sleep "0.0$((RANDOM % 7))"  # no python3 here: its start alone outlasts a pass
        if [ $((RANDOM % 2)) -eq 0 ]; then kill -KILL "$t1" 2>/dev/null || true; fi
        rc=0
        wait "$t1" 2>/dev/null || rc=$?
        [ $rc -ne 137 ] || kills=$((kills + 1))
        [ -z "$t2" ] || wait "$t2" || fail "a tick that found the store busy exited $?"
        ticks=$((ticks + 1))
        sleep 0.3
      done
      refused="$(grep -c "is in use by pid [0-9]* (mirage tick)" "$dir/tick.out" || true)"
      faults="$(grep -c "fault injection: SIGKILL" "$dir/tick.log" || true)"
      [ -z "$(grep -v "^mirage tick: " "$dir/tick.out")" ] || fail "a tick printed more than its one line: $(grep -v '^mirage tick: ' "$dir/tick.out" | head -3)"
      if [ $self_check -eq 1 ]; then
        note "self-check: submitting a stray job named ticked-s1 behind the ticks' back"
        sbatch -Q -J ticked-s1 -t 1 -o /dev/null --wrap "sleep 1" >/dev/null
        sleep 3
      fi
      check_exactly_once "$id" ticked 3
      # Ticks further apart than a segment's run plus MinJobAge: each segment runs and is purged
      # between two ticks, never seen running. Its output file, named at its submission, says it
      # ran, and the chain goes on (with the fallback chain on, as sites run it). slurmctld purges
      # on its own schedule: each tick waits until the campaign's jobs are gone.
      sparse_id="$(cd "$work" && mirage campaign add --name sparse --script short.sh --segments 2 \
        --nodes 1 --gpus-per-node 4 --time 1 --no-export-env --policy reactive \
        --fallback-chain on --json 2>>"$dir/tick-add.err" | json_get 'd["id"]')"
      sparse_ticks=0
      deadline=$((SECONDS + 420))
      while [ "$(state_of "$sparse_id" 2>/dev/null || echo unknown)" != done ]; do
        [ $SECONDS -lt $deadline ] || { mirage campaign show "$sparse_id" >&2 || true; fail "the sparsely ticked campaign is not done after 420s"; }
        "$bin" tick --config "$tconf" >>"$dir/tick.out" 2>>"$dir/tick.log" || fail "a sparse tick exited $?"
        sparse_ticks=$((sparse_ticks + 1))
        for job in $(mirage campaign show "$sparse_id" --json | json_get '" ".join(str(s["job_id"]) for s in d["segment_list"] if s["job_id"] > 0)'); do
          while scontrol show job "$job" >/dev/null 2>&1; do
            [ $SECONDS -lt $deadline ] || fail "job $job of the sparse campaign was not purged"
            sleep 2
          done
        done
      done
      check_exactly_once "$sparse_id" sparse 2
      settled="$(grep -c "campaign $sparse_id segment [0-9]: job [0-9]* ended while mirage was not looking; its output file" "$dir/tick.log" || true)"
      [ "$settled" -eq 2 ] || fail "the sparse ticks settled $settled of 2 segments by their output file"
      note "tick: ticks after each segment ran and was purged (6 s runs, MinJobAge 2 s): done after $sparse_ticks ticks, each segment once, both settled by their output file"
      via_config=""
      note "tick: done after $ticks ticks ($kills died of SIGKILL, $faults of them by their own hand at submission points, $refused stood aside for another tick); each segment submitted once ($(grep -c 'adopted job' "$dir/tick.log" || true) adopted by tag, $(grep -c 'submitting it again' "$dir/tick.log" || true) submitted again)"
      ;;
    *) fail "unknown phase '$phase'" ;;
  esac
done

st="$(mirage status --json)"
note "figures: $(json_get '"%d polls, %.2f job dumps per tick, %.2f RPCs per tick, cycle max %.1f ms, RSS %.1f MiB" % (d["polls"], d["rpc"]["job_dumps_per_tick"], d["rpc"]["per_tick"], d["cycle_ms"]["max"], d["rss_kib"] / 1024)' <<<"$st")"

kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
set +e
out="$("$bin" campaign list --socket "$sock" 2>&1)"
rc=$?
set -e
[ $rc -eq 3 ] && grep -q "not running" <<<"$out" || fail "a stopped daemon is not reported clearly (rc $rc: $out)"
note "PASS (${phases[*]})"
