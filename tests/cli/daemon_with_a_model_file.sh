#!/usr/bin/env bash
# The daemon decides with a learned agent's model file through the plugin (simulator backend, the
# embedded sample at 3600x): a campaign added with --policy MODEL gets decisions from the model.
# Without the plugin, adding such a campaign is refused with a message naming the plugin, and the
# daemon keeps serving.
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

start_daemon with
id="$(add "$dir/with.sock" | json_get 'd["id"]')"
for _ in $(seq 60); do
  n="$("$bin" campaign show "$id" --json --socket "$dir/with.sock" |
    json_get "sum(1 for x in d['decisions'] if x['policy'] == '$model' and x['action'] in ('wait', 'submit') and 0 < x['confidence'] < 1)")"
  [ "$n" -gt 0 ] && break
  sleep 1
done
[ "$n" -gt 0 ] || fail "no decision by $model after 60 s"
echo "ok: $n decision(s) by the model file in the daemon"
stop_daemon

start_daemon without MIRAGE_LEARNED_PLUGIN="$dir/no-such-plugin.so"
set +e
out="$(add "$dir/without.sock" 2>&1)"
rc=$?
set -e
[ $rc -ne 0 ] || fail "a campaign with a model file was accepted without the plugin: $out"
grep -q "learned agents' plugin could not be loaded" <<<"$out" || fail "the refusal does not name the plugin: $out"
"$bin" status --socket "$dir/without.sock" >/dev/null || fail "the daemon stopped serving after the refusal"
echo "ok: refused without the plugin (rc $rc) and still serving: $(head -1 <<<"$out")"
