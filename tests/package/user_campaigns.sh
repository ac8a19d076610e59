#!/usr/bin/env bash
# The binary tarball chaining campaigns as a user at a site would: an unprivileged user unpacks it
# into ~/.local and drives a campaign of three short segments with `mirage tick` alone (as from
# scrontab), then another with `mirage daemon` (as from the systemd user unit), against a real
# slurmctld (tests/slurm/cluster.sh, a cluster of its own), each until done, each segment having
# run once.
#
#   tests/package/user_campaigns.sh TARBALL [RELEASE]    (as root; exit 77, skipped, without
#                                                         what it needs)
# Without RELEASE, on this machine with its own Slurm, as the user miragesite. With RELEASE
# (trixie), in that release's minimal root (tests/package/site_root.sh: Slurm's runtime and
# client, none of mirage's libraries, no -dev package), whose own slurmctld, slurmd and munged it
# starts there, as the root's user.
set -euo pipefail
tarball="$(realpath "$1")"
release="${2:-}"
here="$(cd "$(dirname "$0")/../.." && pwd)"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (the cluster, the user)"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }
cluster_dir=/tmp/mirage-package-cluster
# The cluster's own directory and ports (tests/slurm/cluster.sh); this script holds the lock.
cluster_env=(MIRAGE_SLURM_DIR="$cluster_dir" MIRAGE_SLURM_CTLD_PORT=18817 MIRAGE_SLURM_NODE_PORT=18901
  MIRAGE_SLURM_LOCK_HELD=1)
mounted=()
if [ -n "$release" ]; then
  command -v debootstrap >/dev/null || { echo "skipped: needs debootstrap"; exit 77; }
  . "$here/tests/package/site_root.sh"
  site_root "$release" || exit 1
  root="$site_root"
  user="$site_user"
  # What slurmd and munged read of the machine, for this run only.
  for m in proc sys dev; do
    mountpoint -q "$root/$m" && continue
    case $m in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sys "$root/sys" ;;
      dev) mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" ;;
    esac
    mounted=("$root/$m" "${mounted[@]+"${mounted[@]}"}")
  done
  grep -qw localhost "$root/etc/hosts" 2>/dev/null || echo "127.0.0.1 localhost" >>"$root/etc/hosts"
  install -D -m 0755 "$here/tests/slurm/cluster.sh" "$root/usr/local/lib/mirage-test/cluster.sh"
  cluster_sh=/usr/local/lib/mirage-test/cluster.sh
  # Runs a command in the root as root, with a clean environment.
  on_site() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "${cluster_env[@]}" "$@"; }
  ids="$(on_site id -u "$user"):$(on_site id -g "$user")"
  home="/home/$user"
else
  for b in slurmctld slurmd sbatch munged; do
    command -v "$b" >/dev/null || { echo "skipped: $b is not installed"; exit 77; }
  done
  root=""
  user=miragesite
  cluster_sh="$here/tests/slurm/cluster.sh"
  on_site() { env "${cluster_env[@]}" "$@"; }
  id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  home="$(getent passwd "$user" | cut -d: -f6)"
  ids="$(id -u "$user"):$(id -g "$user")"
fi
# chroot execs (runuser would stay the parent and end 143 on SIGTERM): the daemon is $! below.
as_user_cmd=(chroot --userspec="$ids" "${root:-/}" /usr/bin/env -i HOME="$home" USER="$user")
slurm_conf="$cluster_dir/slurm.conf"
as_user() {
  "${as_user_cmd[@]}" SLURM_CONF="$slurm_conf" LANG=C.UTF-8 \
    PATH="$home/.local/bin:/usr/bin:/bin" bash -c "cd && $1"
}
# One Slurm cluster at a time on this machine, whoever starts it: a root's daemons bind this
# machine's ports too. cluster.sh start must not wait for the lock this script holds.
exec 9>/tmp/mirage-slurm-cluster.lock
flock 9

daemon_pid=""
cleanup() {
  [ -z "$daemon_pid" ] || kill -TERM "$daemon_pid" 2>/dev/null || true
  on_site bash "$cluster_sh" stop 9>&- >/dev/null 2>&1 || true
  # The root's munged serves no one once its cluster is gone.
  local pid
  pid="$(tr -dc '0-9' 2>/dev/null <"$root/run/munge/munged.pid" || true)"
  if [ -n "$root" ] && [ -n "$pid" ] && [ "$(readlink "/proc/$pid/root")" = "$root" ]; then
    kill -TERM "$pid" 2>/dev/null || true
  fi
  local m
  for m in "${mounted[@]+"${mounted[@]}"}"; do umount -R "$m" 2>/dev/null || umount -R -l "$m" || true; done
}
trap cleanup EXIT
rm -rf "$root$home/.local" "$root$home/campaign"
install -o "${ids%:*}" -g "${ids#*:}" -m 0644 "$tarball" "$root$home/"

# The daemons started here must not inherit the lock's descriptor: munged outlives this script
# and would hold the lock for every other cluster on the machine.
on_site bash "$cluster_sh" start --nodes 2 9>&- >/tmp/mirage-package-cluster.log 2>&1 ||
  fail "the Slurm cluster did not start: $(tail -5 /tmp/mirage-package-cluster.log)"
chmod 0755 "$root$cluster_dir"
echo "ok: $(on_site slurmctld -V) runs$([ -z "$release" ] || echo " in the $release root")"

as_user "mkdir -p ~/.local ~/campaign && tar -xzf $(basename "$tarball") --strip-components=1 -C ~/.local
cat >~/campaign/mirage.toml <<CONF
[cluster]
backend = \"slurm\"
slurm_conf = \"$slurm_conf\"
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

json_get() { python3 -c "import json,sys; print($1)"; }
add_campaign() {  # add_campaign NAME: its id
  as_user "cd ~/campaign && mirage campaign add --name $1 --script segment.sh --segments 3 \
    --nodes 1 --gpus-per-node 4 --time-limit 1 --no-export-env --policy reactive --json \
    --config ~/campaign/mirage.toml 2>/dev/null" | json_get 'json.load(sys.stdin)["id"]' ||
    fail "campaign add $1 --config as $user"
}
show() { as_user "mirage campaign show $1 --json --config ~/campaign/mirage.toml 2>/dev/null"; }
# Done within 300 s with one submission a segment: `waiting` says what else ran meanwhile.
expect_chained() {  # expect_chained ID HOW
  local state jobs
  state="$(show "$1" | json_get 'json.load(sys.stdin)["state"]')"
  [ "$state" = done ] || fail "$2: the campaign is $state after 300 s"
  jobs="$(show "$1" | json_get 'len(json.load(sys.stdin)["submissions"])')"
  [ "$jobs" = 3 ] || fail "$2: 3 segments took $jobs submissions"
}

# 1. `mirage tick` alone, every 2 s.
id="$(add_campaign ticked)"
: >/tmp/mirage-package-ticks.log
start=$SECONDS
ticks=0
while [ $((SECONDS - start)) -lt 300 ]; do
  as_user "mirage tick --config ~/campaign/mirage.toml" >>/tmp/mirage-package-ticks.log 2>&1 ||
    fail "mirage tick as $user: $(tail -3 /tmp/mirage-package-ticks.log)"
  ticks=$((ticks + 1))
  [ "$(show "$id" | json_get 'json.load(sys.stdin)["state"]')" = done ] && break
  sleep 2
done
expect_chained "$id" "tick"
echo "ok: as $user, 3 segments chained by $ticks ticks of the unpacked tarball in $((SECONDS - start)) s"

# 2. `mirage daemon`, the campaign added through its socket.
# exec all the way down (chroot or runuser, env, bash, the launcher): $! is the daemon itself.
(as_user_cmd=(exec "${as_user_cmd[@]}") && as_user "exec mirage daemon --config ~/campaign/mirage.toml") \
  >/tmp/mirage-package-daemon.log 2>&1 &
daemon_pid=$!
deadline=$((SECONDS + 30))
until as_user "test -S ~/campaign/mirage.sock"; do
  kill -0 "$daemon_pid" 2>/dev/null || fail "mirage daemon as $user exited: $(tail -3 /tmp/mirage-package-daemon.log)"
  [ $SECONDS -lt $deadline ] || fail "mirage daemon as $user made no socket in 30 s"
  sleep 0.5
done
start=$SECONDS
id="$(add_campaign daemoned)"
while [ $((SECONDS - start)) -lt 300 ]; do
  [ "$(show "$id" | json_get 'json.load(sys.stdin)["state"]')" = done ] && break
  kill -0 "$daemon_pid" 2>/dev/null || fail "mirage daemon as $user exited: $(tail -3 /tmp/mirage-package-daemon.log)"
  sleep 1
done
expect_chained "$id" "daemon"
echo "ok: as $user, 3 segments chained by the unpacked tarball's daemon in $((SECONDS - start)) s"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "mirage daemon as $user exited $? on SIGTERM: $(tail -3 /tmp/mirage-package-daemon.log)"
daemon_pid=""
