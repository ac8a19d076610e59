#!/usr/bin/env bash
# The daemon decides with a learned agent's model file (simulator backend, the embedded sample at
# 3600x): a campaign added with --policy MODEL gets decisions from the model, with the training
# plugin (and LibTorch) in reach or not, and so does `mirage tick` without it.
#   daemon_with_a_model_file.sh MIRAGE_BIN MODEL_FILE DIR
set -euo pipefail
bin="$(realpath "$1")" model="$(realpath "$2")" dir="$3"
rm -rf "$dir" && mkdir -p "$dir"
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; echo "---- daemon log" >&2; cat "$dir"/daemon-*.log >&2 || true; exit 1; }
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

start_daemon() {  # start_daemon NAME [ENV=VALUE...]
  local name="$1"
  shift
  cat >"$dir/$name.toml" <<CONF
[cluster]
backend = "simulator"
[simulator]
speed = 3600
[poll]
interval = 1
[store]
path = "$dir/$name.db"
[socket]
path = "$dir/$name.sock"
CONF
  env "$@" "$bin" daemon --config "$dir/$name.toml" >"$dir/daemon-$name.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do
    "$bin" status --socket "$dir/$name.sock" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "the daemon did not come up"
}
stop_daemon() { kill "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""; }
printf '#!/bin/bash\nsrun train\n' >"$dir/segment.sh"
add() {  # add SOCKET -> the reply, JSON
  (cd "$dir" && "$bin" campaign add --name learned --script segment.sh --segments 2 --nodes 4 \
    --time 4:00:00 --policy "$model" --no-export-env --json --socket "$1")
}

# Decisions by the network itself: a rule decides with confidence 0 or 1.
count="sum(1 for x in d['decisions'] if x['policy'] == '$model' and x['action'] in ('wait', 'submit') and 0 < x['confidence'] < 1)"
wait_for_decisions() {  # wait_for_decisions ID --socket SOCKET -> how many, after at most 60 s
  local n=0
  for _ in $(seq 60); do
    n="$("$bin" campaign show "$@" --json | json_get "$count")"
    [ "$n" -gt 0 ] && break
    sleep 1
  done
  echo "$n"
}

start_daemon with
id="$(add "$dir/with.sock" | json_get 'd["id"]')"
n="$(wait_for_decisions "$id" --socket "$dir/with.sock")"
[ "$n" -gt 0 ] || fail "no decision by $model after 60 s"
echo "ok: $n decision(s) by the model file in the daemon"
stop_daemon

# Deciding with a model file needs no LibTorch: the plugin (training only) out of reach, the daemon
# and then `mirage tick` decide with the model as before.
start_daemon without MIRAGE_LEARNED_PLUGIN="$dir/no-such-plugin.so"
id="$(add "$dir/without.sock" | json_get 'd["id"]')"
n="$(wait_for_decisions "$id" --socket "$dir/without.sock")"
[ "$n" -gt 0 ] || fail "no decision by $model without the plugin after 60 s"
echo "ok: $n decision(s) by the model file in the daemon without the plugin"
stop_daemon

# `mirage tick`, one pass at a time on the daemon's store, without the plugin.
sed -i "s#$dir/without.db#$dir/tick.db#; s#$dir/without.sock#$dir/tick.sock#" "$dir/without.toml"
# Segments of 48 h (48 s here): a loaded machine's ticks, seconds apart, still see the first run.
(cd "$dir" && MIRAGE_LEARNED_PLUGIN="$dir/no-such-plugin.so" "$bin" campaign add --name learned \
  --script segment.sh --segments 2 --nodes 4 --time-limit 48:00:00 --policy "$model" \
  --no-export-env --config "$dir/without.toml" >"$dir/tick-add.log" 2>&1) ||
  fail "campaign add --config: $(cat "$dir/tick-add.log")"
for _ in $(seq 60); do
  MIRAGE_LEARNED_PLUGIN="$dir/no-such-plugin.so" "$bin" tick --config "$dir/without.toml" \
    >>"$dir/tick.log" 2>&1 || fail "mirage tick failed: $(tail -3 "$dir/tick.log")"
  n="$("$bin" campaign show 1 --json --config "$dir/without.toml" 2>/dev/null | json_get "$count")"
  [ "$n" -gt 0 ] && break
  sleep 1
done
[ "$n" -gt 0 ] || fail "no decision by $model in 60 ticks without the plugin: $(tail -3 "$dir/tick.log")"
echo "ok: $n decision(s) by the model file in \`mirage tick\` without the plugin"
