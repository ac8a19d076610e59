#!/usr/bin/env bash
# The daemon on its embedded simulated cluster (cluster.backend = "simulator"), SIGKILLed at
# random moments and restarted, some 30 times, plus self-inflicted kills right after an intent is
# durable and right after a submission (MIRAGE_FAULT_AFTER_INTENT / MIRAGE_FAULT_AFTER_SUBMIT).
# Four campaigns of 5 segments (reactive and average, concurrent and hand-off) must all finish, and the
# simulated cluster's own record (the state file beside the store) must hold exactly one job per
# segment, the one the store follows: none submitted twice, none lost. No Slurm and no root.
#
#   tests/daemon/simulator_crash.sh --bin build/cli/mirage-with-faults [--dir DIR] [--kills N] [--self-check]
#
# --self-check deletes the simulated cluster's state before one restart, as if it were not kept
# (what every restart did before it was): the checks must then catch it, and the script exits 0
# only if they do, which shows they have teeth.
set -euo pipefail

bin=""
dir="${TMPDIR:-/tmp}/mirage-simulator-crash"
kills=30
self_check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --self-check) self_check=1; shift ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "simulator_crash: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$bin" ] && [ -x "$bin" ] || { echo "simulator_crash: --bin must name the mirage binary" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
command -v python3 >/dev/null || { echo "simulator_crash: SKIP (python3 not installed)"; exit 77; }

sock="$dir/mirage.sock"
conf="$dir/daemon.toml"
log="$dir/daemon.log"
store="$dir/store.db"
state="$store.simulated-cluster.json"
daemon_pid=""
t_start=$SECONDS

note() { echo "simulator_crash [$((SECONDS - t_start))s]: $*"; }
fail() {
  if [ $self_check -eq 1 ]; then
    echo "simulator_crash: self-check: the checks caught the forgotten cluster: $*"
    exit 0
  fi
  echo "simulator_crash: FAIL: $*" >&2
  echo "---- tail of $log" >&2
  tail -n 30 "$log" >&2 || true
  exit 1
}
daemon_alive() { [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; }
kill_daemon() {
  if daemon_alive; then kill -KILL "$daemon_pid" 2>/dev/null || true; fi
  [ -n "$daemon_pid" ] && { wait "$daemon_pid" 2>/dev/null || true; }
  daemon_pid=""
}
trap kill_daemon EXIT
start_daemon() {  # start_daemon [ENV=VALUE...]
  env "$@" "$bin" daemon --config "$conf" >>"$log" 2>&1 &
  daemon_pid=$!
}
mirage() { "$bin" "$@" --socket "$sock"; }
wait_daemon_up() {
  local deadline=$((SECONDS + 30))
  while [ $SECONDS -lt $deadline ]; do
    mirage status --json >/dev/null 2>&1 && return 0
    daemon_alive || return 1
    sleep 0.1
  done
  return 1
}
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

rm -rf "$dir"
mkdir -p "$dir/work"
# 600 simulated seconds a wall second: a 2-hour segment runs 12 s, a 5-segment campaign over a
# minute, as long as the kill loop; polls every simulated 10 min.
cat >"$conf" <<CONF
[cluster]
backend = "simulator"
[simulator]
speed = 600
[poll]
interval = 1
[store]
path = "$store"
[socket]
path = "$sock"
[policy]
decision_interval = "10m"
fallback_lead = "5m"
[guard]
max_retries = 2
retry_delay = "5m"
[handoff]
grace = "5m"
CONF
"$bin" daemon --config "$conf" --check >/dev/null || fail "the daemon config does not check"
printf '#!/bin/bash\nsleep 1\n' >"$dir/work/segment.sh"

faults_env=(MIRAGE_FAULT_AFTER_INTENT=0.2 MIRAGE_FAULT_AFTER_SUBMIT=0.2)
start_daemon  # no self-inflicted kills while the campaigns are added
wait_daemon_up || fail "the daemon did not come up"
ids=()
add() {  # add NAME POLICY OVERLAP
  (cd "$dir/work" && mirage campaign add --name "$1" --script segment.sh --segments 5 --nodes 1 \
    --gpus-per-node 4 --time 2:00:00 --policy "$2" --overlap "$3" --no-export-env --json) |
    json_get 'd["id"]'
}
ids+=("$(add r1 reactive concurrent)" "$(add r2 reactive handoff)")
ids+=("$(add a1 average concurrent)" "$(add a2 average handoff)")
note "daemon up; campaigns ${ids[*]} added"
kill_daemon

restarts=0
faults=0
for ((round = 0; round < 4 * kills && restarts < kills; round++)); do
  if ! daemon_alive; then
    [ -n "$daemon_pid" ] && { wait "$daemon_pid" 2>/dev/null || true; faults=$((faults + 1)); }
    if [ $self_check -eq 1 ] && [ $restarts -eq $((kills / 2)) ]; then
      note "self-check: forgetting the simulated cluster before this restart"
      rm -f "$state"
    fi
    start_daemon "${faults_env[@]}"
    restarts=$((restarts + 1))
  fi
  sleep "$(python3 -c 'import random; print(round(random.uniform(0.3, 2.0), 2))')"
  if daemon_alive && [ $((RANDOM % 3)) -ne 0 ]; then kill_daemon; fi
done
kill_daemon
start_daemon
wait_daemon_up || fail "the daemon did not come up after the kill loop"
note "$restarts restarts ($faults self-inflicted kills at submission points); waiting for completion"

deadline=$((SECONDS + 300))
while :; do
  daemon_alive || { daemon_pid=""; start_daemon; wait_daemon_up || fail "the daemon did not come up"; }
  states="$(mirage campaign list --json | json_get '" ".join(c["state"] for c in d)')"
  case " $states " in
    *" failed "* | *" cancelled "*)
      for id in "${ids[@]}"; do mirage campaign show "$id" >&2 || true; done
      fail "a campaign ended without finishing: $states" ;;
  esac
  [ -z "$(echo "$states" | tr ' ' '\n' | grep -v '^done$' || true)" ] && break
  # A segment held because the cluster no longer knows its job never finishes on its own: said
  # at once rather than after the deadline (the self-check's forgotten cluster ends here).
  if grep -q "whether it ran cannot be known" "$log"; then
    fail "the daemon lost a job it followed: $(grep -m1 -o 'job [0-9]* left the queue[^(]*' "$log")"
  fi
  [ $SECONDS -lt $deadline ] || fail "campaigns not done after 300 s: $states"
  sleep 1
done
note "all ${#ids[@]} campaigns done"

# The cluster's record against the store's: one job per segment, and it is the one followed.
for id in "${ids[@]}"; do
  mirage campaign show "$id" --json >"$dir/campaign-$id.json"
done
python3 - "$state" "$dir" "${ids[@]}" <<'PY' || fail "the simulated cluster's record does not match the store"
import json, sys
state, folder, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
jobs = {}
for e in json.load(open(state))["events"]:
    if e["op"] != "submit":
        continue
    parts = e["comment"].split(":")  # mirage:<store>:<campaign>:<segment>:<attempt>
    jobs.setdefault((parts[2], int(parts[3])), []).append(e["job"] + 1)
bad = []
for cid in ids:
    c = json.load(open(f"{folder}/campaign-{cid}.json"))
    for s in c["segment_list"]:
        got = jobs.get((cid, s["index"]), [])
        if len(got) != 1:
            bad.append(f"campaign {cid} segment {s['index']}: {len(got)} jobs in the cluster {got}")
        elif got[0] != s["job_id"]:
            bad.append(f"campaign {cid} segment {s['index']}: the store follows job {s['job_id']}, the cluster ran {got[0]}")
    if len(c["submissions"]) != len(c["segment_list"]):
        bad.append(f"campaign {cid}: {len(c['submissions'])} submissions in the intent log")
for b in bad:
    print("simulator_crash:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
note "each segment ran as exactly one job of the simulated cluster ($(grep -c 'adopted job' "$log" || true) adopted by tag, $(grep -c 'submitting it again' "$log" || true) intents submitted again after restarts)"
if [ $self_check -eq 1 ]; then
  echo "simulator_crash: FAIL: self-check: the cluster was forgotten and no check noticed" >&2
  exit 1
fi
