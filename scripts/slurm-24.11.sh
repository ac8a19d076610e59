#!/usr/bin/env bash
# Builds mirage against Slurm 24.11 and runs the suites a site relies on (campaigns, #SBATCH lines
# through sbatch, ticks, faults, crash and restart, the live snapshot and `mirage forecast`, the
# user's limits from accounting) on a real 24.11 cluster: slurmctld, slurmd, slurmdbd, MariaDB and
# munge from Debian 13 (trixie), in a root file system of Debian's packages beside this machine's
# own. Then the binary tarball made from that build (scripts/package.sh) as a user at a site meets
# it, in a second, minimal Debian 13 root (tests/package/: unpack, first table, a campaign chained
# by `mirage tick` and one by `mirage daemon`).
#   scripts/slurm-24.11.sh                the root (once), its packages, the build, the tarball, the
#                                         suites, the user's tests
#   scripts/slurm-24.11.sh --build-only   the build alone: no tarball, no tests
#   scripts/slurm-24.11.sh --shell        a shell in the root, the repository at /src
# Idempotent and cached: the root, its packages and build-slurm24.11/ inside it are reused; only
# what changed is built again. The suites take the test-cluster lock of their ports (as
# tests/slurm/cluster.sh does), so they never overlap another cluster on those ports: by default
# this machine's own Slurm cluster tests' (/tmp/mirage-slurm-cluster.lock); with
# MIRAGE_SLURM24_PORT_OFFSET=N every port of the root's clusters is N higher and the lock is
# /tmp/mirage-slurm-cluster-N.lock, so they run beside this machine's own (.ci/run does).
# Environment: MIRAGE_SLURM24_DIR (default /var/tmp/mirage-slurm24.11: the root, logs, timings),
# MIRAGE_DEBIAN_MIRROR (default http://deb.debian.org/debian), MIRAGE_JOBS (build jobs),
# MIRAGE_SLURM24_SUITES (which suites), MIRAGE_SLURM24_PORT_OFFSET (default 0).
# Needs root and debootstrap (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
base="${MIRAGE_SLURM24_DIR:-/var/tmp/mirage-slurm24.11}"
root="$base/root"
mirror="${MIRAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
jobs="${MIRAGE_JOBS:-$(nproc)}"
build=/build-slurm24.11
port_offset="${MIRAGE_SLURM24_PORT_OFFSET:-0}"
[[ "$port_offset" =~ ^[0-9]+$ ]] || { echo "slurm-24.11: MIRAGE_SLURM24_PORT_OFFSET must be a number, got '$port_offset'" >&2; exit 2; }
default_lock=/tmp/mirage-slurm-cluster.lock
[ "$port_offset" -eq 0 ] || default_lock="/tmp/mirage-slurm-cluster-$port_offset.lock"
lock_file="${MIRAGE_SLURM_LOCK:-$default_lock}"
mode="${1:-all}"
case "$mode" in all | --build-only | --shell) ;; *) echo "slurm-24.11: unknown argument '$mode'" >&2; exit 2 ;; esac

# What mirage needs to build and package (no LibTorch: the learned agents' plugin is left out) and
# the 24.11 cluster the suites start (tests/slurm/cluster.sh, tests/daemon/integration.sh), with
# accounting (tests/daemon/accounting_limits.sh).
packages=(
  cmake g++ make pkg-config ca-certificates ccache python3 procps patchelf
  libslurm-dev libboost-dev libspdlog-dev libfmt-dev libtomlplusplus-dev libsqlite3-dev
  libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  slurmctld slurmd slurm-client munge slurmdbd mariadb-server
)
# The suites that matter on a site (tests/daemon/CMakeLists.txt); all of them are label slurm.
# MIRAGE_SLURM24_SUITES (a ctest -R expression) runs fewer while working on one.
suites="${MIRAGE_SLURM24_SUITES:-^daemon_slurm_(integration_(campaigns|faults|scripts|ticks)|accounting_limits|restored_store|requeue_after_end)\$}"

say() { echo "slurm-24.11: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "must run as root (chroot, mounts, the Slurm daemons)"; exit 1; }
mkdir -p "$base"
timings="$base/timings.txt"
stage_start=$SECONDS
stage() {
  local now=$SECONDS
  printf '%-10s %4d s\n' "$1" $((now - stage_start)) | tee -a "$timings" >&2
  stage_start=$now
}
echo "# $(date -u +%FT%TZ) $mode" >>"$timings"
all_start=$SECONDS

# The root, once: built aside and moved in place, so a half-made one is never taken for done.
if [ ! -f "$root/.mirage-root" ]; then
  command -v debootstrap >/dev/null || { say "debootstrap not found: run scripts/install-deps.sh"; exit 1; }
  rm -rf "$base/root.partial"
  say "debootstrap trixie into $root (log $base/debootstrap.log)"
  debootstrap --variant=minbase trixie "$base/root.partial" "$mirror" >"$base/debootstrap.log" 2>&1 ||
    { tail -n 20 "$base/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }
  [ ! -e "$root" ] || { say "$root exists without the marker of a finished root: remove it (unmount first)"; exit 1; }
  mv "$base/root.partial" "$root"
  touch "$root/.mirage-root"
fi
stage root

# The kernel's file systems and the repository, bound for this run only.
mounted=()
bind() {  # bind SOURCE TARGET [mount options...]
  local src="$1" dst="$root$2"
  shift 2
  mkdir -p "$dst"
  if ! mountpoint -q "$dst"; then
    mount "$@" "$src" "$dst"
    mounted=("$dst" "${mounted[@]+"${mounted[@]}"}")
  fi
}
unbind() {
  local m
  for m in "${mounted[@]+"${mounted[@]}"}"; do umount -R "$m" 2>/dev/null || umount -R -l "$m" || true; done
}
trap unbind EXIT
bind proc /proc -t proc
bind sys /sys -t sysfs
bind /dev /dev --rbind
mount --make-rslave "$root/dev"
bind "$repo" /src --bind
cp /etc/resolv.conf "$root/etc/resolv.conf"
grep -qw localhost "$root/etc/hosts" 2>/dev/null || echo "127.0.0.1 localhost" >>"$root/etc/hosts"

in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TZ=UTC CI="${CI:-}" DEBIAN_FRONTEND=noninteractive \
    CCACHE_DIR=/var/cache/mirage-ccache MIRAGE_SLURM_PORT_OFFSET="$port_offset" "$@"
}

# The packages, again only when the list changed.
want="$(printf '%s\n' "${packages[@]}" | sha256sum | cut -c1-16)"
if [ "$(cat "$root/.mirage-packages" 2>/dev/null)" != "$want" ]; then
  say "installing ${#packages[@]} packages in the root (log $base/apt.log)"
  # No daemon starts on install: MariaDB's would, through its init script.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  in_root bash -c "apt-get update -q && apt-get install -y -q --no-install-recommends ${packages[*]}" \
    >"$base/apt.log" 2>&1 || { tail -n 20 "$base/apt.log" >&2; say "apt-get failed in the root"; exit 1; }
  echo "$want" >"$root/.mirage-packages"
fi
say "$(in_root slurmctld -V) in the root, $(slurmctld -V 2>/dev/null || echo 'no Slurm') on this machine"
stage packages

if [ "$mode" = --shell ]; then
  in_root bash -c "cd /src && exec bash -i"
  exit $?
fi

# Only what the suites run: the program and its build with the fault hooks.
if [ ! -f "$root$build/CMakeCache.txt" ]; then
  in_root cmake -S /src -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMIRAGE_BUILD_BENCH=OFF \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"$base/configure.log" 2>&1 ||
    { tail -n 30 "$base/configure.log" >&2; say "cmake failed in the root"; exit 1; }
fi
in_root cmake --build "$build" -j "$jobs" --target mirage mirage-with-faults >"$base/build.log" 2>&1 ||
  { grep -E ': error|\*\*\*' "$base/build.log" | head -n 30 >&2; say "the build failed (log $base/build.log)"; exit 1; }
say "$(in_root "$build/cli/mirage" --version)"
stage build

if [ "$mode" = --build-only ]; then
  say "built in $((SECONDS - all_start)) s"
  exit 0
fi

# The binary tarball a site on 24.11 unpacks (scripts/package.sh), from the same build.
tarball="$(in_root env MIRAGE_BUILD_DIR="$build" MIRAGE_JOBS="$jobs" bash -c 'cd /src && bash scripts/package.sh' 2>&1 |
  tee "$base/package.log" | sed -n 's/^package.sh: \(dist\/[^ ]*\.tar\.gz\) .*/\1/p')"
[ -n "$tarball" ] && [ -f "$tarball" ] || { tail -n 20 "$base/package.log" >&2; say "scripts/package.sh failed in the root"; exit 1; }
say "$(tail -n 1 "$base/package.log")"
stage package

# The user's minimal root (tests/package/site_root.sh), when missing, is made while the suites run:
# debootstrap waits on the mirror, the suites mostly on Slurm.
(. tests/package/site_root.sh && site_root trixie) >"$base/site-root.log" 2>&1 9>&- &
site_root_pid=$!

# The root's clusters bind this machine's ports: hold their ports' lock while they run.
# The descriptor is closed for everything the root runs, so no daemon started there keeps the lock.
lock_wait="${MIRAGE_SLURM_LOCK_WAIT:-1800}"
exec 9>>"$lock_file"
if ! flock -n 9; then
  say "waiting up to ${lock_wait}s for $lock_file: another Slurm test cluster runs on this machine"
  flock -w "$lock_wait" 9 || {
    say "$lock_file still held after ${lock_wait}s by: $(fuser "$lock_file" 2>/dev/null)"
    exit 1
  }
fi
rc=0
in_root ctest --test-dir "$build" -R "$suites" --output-on-failure 9>&- || rc=$?
# The suites leave munged running (it serves every cluster); the root's is ended with them.
munged_pid="$(tr -dc '0-9' <"$root/run/munge/munged.pid" 2>/dev/null || true)"
if [ -n "$munged_pid" ] && [ "$(readlink "/proc/$munged_pid/root")" = "$root" ]; then
  kill -TERM "$munged_pid" 2>/dev/null || true
fi
exec 9>&-
stage suites

# The tarball as a user at a site meets it: a second, minimal Debian 13 root with Slurm 24.11's
# runtime and client but nothing of mirage's (tests/package/, which takes the lock itself).
user_rc=0
wait "$site_root_pid" || { cat "$base/site-root.log" >&2; say "the minimal Debian 13 root could not be made"; exit 1; }
bash tests/package/user_install.sh "$tarball" trixie || user_rc=$?
bash tests/package/user_campaigns.sh "$tarball" trixie || user_rc=$?
stage user
say "finished in $((SECONDS - all_start)) s (ctest exit $rc, package tests exit $user_rc; timings in $timings)"
[ $rc -ne 0 ] || rc=$user_rc
exit $rc
