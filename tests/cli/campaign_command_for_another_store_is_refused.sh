#!/usr/bin/env bash
# Two configs without a [socket] path share the default socket: the daemon of store A answers a
# `campaign cancel --config B.toml` and refuses it (naming both stores and the socket) instead of
# cancelling A's campaign of that number; A's own config (here through a symlink to its store) and
# --socket alone are served as before.
#   campaign_command_for_another_store_is_refused.sh MIRAGE_BIN DIR
set -euo pipefail
bin="$(realpath "$1")" dir="$2"
rm -rf "$dir" && mkdir -p "$dir/run"
export XDG_RUNTIME_DIR="$dir/run"
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null || true' EXIT
fail() { echo "FAIL: $*" >&2; cat "$dir"/daemon.log >&2 2>/dev/null || true; exit 1; }

config() {  # config NAME STORE
  printf '[cluster]\nbackend = "simulator"\n[store]\npath = "%s"\n[log]\nlevel = "warn"\n' "$2" >"$dir/$1.toml"
}
config a "$dir/a.db"
config b "$dir/b.db"
config a-link "$dir/a-link.db"
printf '#!/bin/bash\n#SBATCH --nodes=1\nsrun x\n' >"$dir/train.sbatch"

"$bin" daemon --config "$dir/a.toml" >"$dir/daemon.log" 2>&1 &
daemon_pid=$!
socket="$dir/run/mirage/mirage.sock"
for _ in $(seq 100); do
  "$bin" status --socket "$socket" >/dev/null 2>&1 && break
  sleep 0.1
done
"$bin" status --socket "$socket" >/dev/null || fail "the daemon did not come up"
ln -s "$dir/a.db" "$dir/a-link.db"

out="$(cd "$dir" && "$bin" campaign add --name train --script "$dir/train.sbatch" --segments 2 \
  --time 1:00:00 --config "$dir/a.toml" 2>&1)" || fail "add on A refused: $out"
set +e
out="$("$bin" campaign cancel 1 --config "$dir/b.toml" 2>&1)"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "cancel for B through A's daemon: rc $rc: $out"
grep -qF "the daemon at $socket serves $dir/a.db, not $dir/b.db; give [socket] path" <<<"$out" ||
  fail "the refusal does not name the socket and both stores: $out"
grep -qF "mirage: that config: $dir/b.toml" <<<"$out" || fail "the refusal does not name B's config: $out"
"$bin" campaign show 1 --json --config "$dir/a-link.toml" | grep -q '"state": "active"' ||
  fail "A's campaign 1 is not active after a cancel meant for B"
out="$("$bin" campaign cancel 1 --socket "$socket" 2>&1)" || fail "cancel with --socket alone: $out"
grep -q "now cancelled" <<<"$out" || fail "cancel with --socket alone: $out"
echo "ok: a cancel for another store refused by the daemon it reached; its own store served"
