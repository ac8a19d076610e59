#!/usr/bin/env bash
# The binary tarball chaining a campaign as a user at a site would: an unprivileged user of this
# machine unpacks it into ~/.local and drives a campaign of three short segments with `mirage
# tick` alone (as from scrontab) against a real slurmctld (tests/slurm/cluster.sh, a cluster of
# its own), until the campaign is done, each segment having run once.
#
#   tests/package/user_tick_campaign.sh TARBALL     (as root; exit 77, skipped, without Slurm)
set -euo pipefail
tarball="$(realpath "$1")"
here="$(cd "$(dirname "$0")/../.." && pwd)"
user=miragesite
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (the cluster, the user)"; exit 77; }
for b in slurmctld slurmd sbatch munged python3 runuser; do
  command -v "$b" >/dev/null || { echo "skipped: $b is not installed"; exit 77; }
done
# One Slurm cluster at a time on this machine, whoever starts it.
exec 9>/tmp/mirage-slurm-cluster.lock
flock 9
export MIRAGE_SLURM_LOCK_HELD=1  # cluster.sh start must not wait for the lock this script holds

export MIRAGE_SLURM_DIR=/tmp/mirage-package-cluster
export MIRAGE_SLURM_CTLD_PORT=18817 MIRAGE_SLURM_NODE_PORT=18901
export SLURM_CONF="$MIRAGE_SLURM_DIR/slurm.conf"
cluster_sh="$here/tests/slurm/cluster.sh"
trap '"$cluster_sh" stop 9>&- >/dev/null 2>&1 || true' EXIT
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home="$(getent passwd "$user" | cut -d: -f6)"
rm -rf "${home:?}"/{.local,campaign}
install -o "$user" -m 0644 "$tarball" "$home/"
as_user() { runuser -u "$user" -- env -i HOME="$home" USER="$user" SLURM_CONF="$SLURM_CONF" \
  PATH="$home/.local/bin:/usr/bin:/bin" bash -c "cd && $1"; }

# The daemons started here must not inherit the lock's descriptor: munged outlives this script
# and would hold the lock for every other cluster on the machine.
munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || {
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged 9>&- 2>/dev/null || true
  sleep 1
}
"$cluster_sh" start --nodes 2 9>&- >/tmp/mirage-package-cluster.log 2>&1 ||
  fail "the Slurm cluster did not start: $(tail -5 /tmp/mirage-package-cluster.log)"
chmod 0755 "$MIRAGE_SLURM_DIR"

as_user "mkdir -p ~/.local ~/campaign && tar -xzf $(basename "$tarball") --strip-components=1 -C ~/.local
cat >~/campaign/mirage.toml <<CONF
[cluster]
backend = \"slurm\"
slurm_conf = \"$SLURM_CONF\"
partition = \"gpu\"
[poll]
interval = 1
[store]
path = \"\$HOME/campaign/store.db\"
[socket]
path = \"\$HOME/campaign/mirage.sock\"
[policy]
default = \"reactive\"
fallback_lead = 30
CONF
printf '#!/bin/bash\necho segment \$MIRAGE_SEGMENT job \$SLURM_JOB_ID\nsleep 6\n' >~/campaign/segment.sh
mirage daemon --check --config ~/campaign/mirage.toml" || fail "setting up as $user"
id="$(as_user "cd ~/campaign && mirage campaign add --name ticked --script segment.sh --segments 3 \
  --nodes 1 --gpus-per-node 4 --time-limit 1 --no-export-env --policy reactive --json \
  --config ~/campaign/mirage.toml 2>/dev/null" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')" ||
  fail "campaign add --config as $user"
: >/tmp/mirage-package-ticks.log
start=$SECONDS
ticks=0
state=""
while [ $((SECONDS - start)) -lt 300 ]; do
  as_user "mirage tick --config ~/campaign/mirage.toml" >>/tmp/mirage-package-ticks.log 2>&1 ||
    fail "mirage tick as $user: $(tail -3 /tmp/mirage-package-ticks.log)"
  ticks=$((ticks + 1))
  show="$(as_user "mirage campaign show $id --json --config ~/campaign/mirage.toml 2>/dev/null")"
  state="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' <<<"$show")"
  [ "$state" = done ] && break
  sleep 2
done
[ "$state" = done ] || fail "the campaign is $state after 300 s of ticks"
jobs="$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["submissions"]))' <<<"$show")"
[ "$jobs" = 3 ] || fail "3 segments took $jobs submissions"
echo "ok: as $user, 3 segments chained by $ticks ticks of the unpacked tarball in $((SECONDS - start)) s"
