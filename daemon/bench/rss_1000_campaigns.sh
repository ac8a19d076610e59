#!/usr/bin/env bash
# Resident memory of the real `mirage daemon` process with 1,000 registered campaigns, on the
# embedded simulator backend (no cluster needed). With MODEL, every third campaign decides with
# that learned agent's model file, which loads the learned-agent plugin (LibTorch) into the daemon.
#
#   daemon/bench/rss_1000_campaigns.sh build/cli/mirage [CAMPAIGNS] [MODEL]
set -euo pipefail
bin="$1"
n="${2:-1000}"
model="${3:+$(realpath "$3")}"
dir="$(mktemp -d /tmp/mirage-rss-XXXXXX)"
cat >"$dir/d.toml" <<CONF
[cluster]
backend = "simulator"
[poll]
interval = 1
[store]
path = "$dir/store.db"
[socket]
path = "$dir/m.sock"
[guard]
max_campaigns_per_user = 100000
[log]
level = "warn"
CONF
"$bin" daemon --config "$dir/d.toml" 2>"$dir/log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
rss() { awk '/VmRSS/ { print $2 }' "/proc/$pid/status"; }
before="$(rss)"
python3 - "$dir/m.sock" "$n" "$model" <<'PY'
import json, socket, sys
path, n, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
f = s.makefile("rwb")
for i in range(n):
    req = {"op": "add", "campaign": {"name": "c%d" % i, "script": "#!/bin/bash\nsrun train\n",
           "segments": 10, "nodes": 1 + i % 4, "gpus_per_node": 4, "time_limit": 172800,
           "policy": model if model and i % 3 == 0 else "average" if i % 2 else "reactive",
           "environment": ["PATH=/usr/bin:/bin", "HOME=/home/u"]}}
    f.write((json.dumps(req) + "\n").encode()); f.flush()
    r = json.loads(f.readline())
    assert r["ok"], r
PY
sleep 10  # let the simulated cluster take the submissions and a few snapshots
after="$(rss)"
echo "mirage daemon RSS: $((before / 1024)) MiB idle, $((after / 1024)) MiB with $n campaigns (simulator backend, 10 s later${model:+, every third deciding with $model})"
