#!/usr/bin/env bash
# Starts and stops a real Slurm cluster on this machine: one slurmctld and N slurmd (multiple-slurmd
# mode), each node with fake GPUs (docs/development.md). Everything lives in one state directory.
#
#   tests/slurm/cluster.sh start  [--nodes N] [--dir DIR] [--accounting] [--sched-param k=v]...
#                                 [--conf Key=Value]...
#   tests/slurm/cluster.sh stop   [--dir DIR]
#   tests/slurm/cluster.sh status [--dir DIR]
#   tests/slurm/cluster.sh env    [--dir DIR]      # prints: export SLURM_CONF=DIR/slurm.conf
#
# Environment (flags win):
#   MIRAGE_SLURM_DIR           state directory (default /tmp/mirage-slurm)
#   MIRAGE_SLURM_NODES         node count (default 4)
#   MIRAGE_SLURM_CTLD_PORT     SlurmctldPort (default 16817)
#   MIRAGE_SLURM_NODE_PORT     first slurmd port; node i listens on PORT+i-1 (default 17001)
#   MIRAGE_SLURM_SCHED_PARAMS  comma-separated k=v merged into SchedulerParameters
#                              (e.g. "bf_window=30,bf_max_job_test=200")
#   MIRAGE_SLURM_CONF_EXTRA    space-separated Key=Value lines that replace or add slurm.conf keys
#                              (e.g. "PriorityWeightAge=1000 PriorityMaxAge=60")
#   MIRAGE_SLURM_START_TIMEOUT seconds to wait for all nodes to be idle (default 30)
#   MIRAGE_SLURM_DBD_PORT      with --accounting: slurmdbd's port (default 16819); MariaDB listens
#                              on 127.0.0.1 at this port + 1000
#   MIRAGE_SLURM_PORT_OFFSET   added to every port above (default 0): a second family of clusters
#                              (scripts/slurm-24.11.sh's root) running beside this machine's own
#   MIRAGE_SLURM_LOCK          the test-cluster lock of these ports (default
#                              /tmp/mirage-slurm-cluster.lock; -OFFSET before .lock with an offset)
#   MIRAGE_SLURM_LOCK_WAIT     seconds start waits for it (default 1800)
#   MIRAGE_SLURM_LOCK_HELD     set: the caller holds that lock already, start takes none
#
# --accounting also starts slurmdbd with its own MariaDB in DIR/mysql, and gives the cluster what
# only accounting makes work: the age factor (PriorityWeightAge=1000, which Slurm ignores without
# slurmdbd), fairshare (PriorityWeightFairshare=10000), enforced associations and QOS limits; the
# accounts `big` (70 shares) and `small` (30 shares), root in both (default `big`), and the QOS
# `capped` (at most one node per user running) that root may ask for.
#
# Slurm 22.05 (Debian 12) and 24.11 (Debian 13, scripts/slurm-24.11.sh) are supported: slurm.conf
# leaves out what the installed release no longer knows. Every cluster of one port offset shares
# fixed ports, so start takes the lock MIRAGE_SLURM_LOCK (flock) and a small holder process keeps
# it until stop, or until slurmctld has been gone for two minutes.
#
# Needs root (SlurmUser=root, munged as the munge user) and the packages slurmctld slurmd
# slurm-client munge (scripts/install-deps.sh). Works without a terminal (CI=true).
set -euo pipefail

die() {
  echo "cluster.sh: error: $*" >&2
  exit 1
}
note() { echo "cluster.sh: $*" >&2; }

usage() {
  sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
}

cmd="${1:-}"
[ -n "$cmd" ] || {
  usage >&2
  exit 2
}
shift

dir="${MIRAGE_SLURM_DIR:-/tmp/mirage-slurm}"
nodes="${MIRAGE_SLURM_NODES:-4}"
ctld_port="${MIRAGE_SLURM_CTLD_PORT:-16817}"
node_port="${MIRAGE_SLURM_NODE_PORT:-17001}"
start_timeout="${MIRAGE_SLURM_START_TIMEOUT:-30}"
dbd_port="${MIRAGE_SLURM_DBD_PORT:-16819}"
port_offset="${MIRAGE_SLURM_PORT_OFFSET:-0}"
[[ "$port_offset" =~ ^[0-9]+$ ]] || die "MIRAGE_SLURM_PORT_OFFSET must be a number, got '$port_offset'"
default_lock=/tmp/mirage-slurm-cluster.lock
[ "$port_offset" -eq 0 ] || default_lock="/tmp/mirage-slurm-cluster-$port_offset.lock"
lock_file="${MIRAGE_SLURM_LOCK:-$default_lock}"
lock_wait="${MIRAGE_SLURM_LOCK_WAIT:-1800}"
accounting=0
sched_overrides=()
conf_overrides=()
if [ -n "${MIRAGE_SLURM_SCHED_PARAMS:-}" ]; then
  IFS=',' read -r -a sched_overrides <<<"${MIRAGE_SLURM_SCHED_PARAMS}"
fi
if [ -n "${MIRAGE_SLURM_CONF_EXTRA:-}" ]; then
  read -r -a conf_overrides <<<"${MIRAGE_SLURM_CONF_EXTRA}"
fi

while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="${2:?--nodes needs a value}"; shift 2 ;;
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    --ctld-port) ctld_port="${2:?--ctld-port needs a value}"; shift 2 ;;
    --node-port) node_port="${2:?--node-port needs a value}"; shift 2 ;;
    --sched-param) sched_overrides+=("${2:?--sched-param needs k=v}"); shift 2 ;;
    --conf) conf_overrides+=("${2:?--conf needs Key=Value}"); shift 2 ;;
    --timeout) start_timeout="${2:?--timeout needs seconds}"; shift 2 ;;
    --accounting) accounting=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ "$nodes" =~ ^[1-9][0-9]*$ ]] || die "--nodes must be a positive integer, got '$nodes'"
[[ "$ctld_port" =~ ^[0-9]+$ ]] || die "--ctld-port must be a number, got '$ctld_port'"
[[ "$node_port" =~ ^[0-9]+$ ]] || die "--node-port must be a number, got '$node_port'"
[[ "$dbd_port" =~ ^[0-9]+$ ]] || die "MIRAGE_SLURM_DBD_PORT must be a number, got '$dbd_port'"
ctld_port=$((ctld_port + port_offset))
node_port=$((node_port + port_offset))
dbd_port=$((dbd_port + port_offset))
db_port=$((dbd_port + 1000))
[ "$db_port" -le 65535 ] && [ $((node_port + nodes)) -le 65535 ] ||
  die "ports beyond 65535: MIRAGE_SLURM_PORT_OFFSET=$port_offset is too large"
case "$dir" in
  /*) ;;
  *) dir="$(pwd)/$dir" ;;
esac
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"
# slurmctld writes times in local time (jobcomp, logs); keep them UTC so readers need no zone.
export TZ=UTC

node_list() {
  local i out=""
  for ((i = 1; i <= nodes; i++)); do out+="n$i "; done
  echo "$out"
}

# The node names of the cluster that was started in $dir (from its slurm.conf), so that stop and
# status do not depend on --nodes being repeated.
configured_nodes() {
  local range
  range="$(sed -n 's/^NodeName=n\[1-\([0-9]*\)\].*/\1/p' "$conf" 2>/dev/null | head -n1)"
  if [ -z "$range" ]; then
    sed -n 's/^NodeName=\(n1\) .*/\1/p' "$conf" 2>/dev/null | head -n1
    return
  fi
  local i
  for ((i = 1; i <= range; i++)); do echo "n$i"; done
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
read_pid() { [ -s "$1" ] && tr -dc '0-9' <"$1" || true; }

# Sends TERM to the daemon whose pid is in $1 (if it is still that daemon), waits up to 10 s,
# then KILL. Idempotent: a missing pid file or a dead process is fine.
stop_pidfile() {
  local pidfile="$1" name="$2" pid comm i
  pid="$(read_pid "$pidfile")"
  if ! pid_alive "$pid"; then
    rm -f "$pidfile"
    return 0
  fi
  comm="$(cat "/proc/$pid/comm" 2>/dev/null || true)"
  if [ "$comm" != "$name" ]; then
    note "pid $pid in $pidfile is '$comm', not $name: left alone"
    rm -f "$pidfile"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pid_alive "$pid" || break
    sleep 0.1
  done
  if pid_alive "$pid"; then
    note "$name (pid $pid) ignored TERM for 10 s: sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$pidfile"
}

munge_works() { command -v munge >/dev/null && munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  if munge_works; then
    return 0
  fi
  command -v munged >/dev/null || die "munged not found: install the munge package (scripts/install-deps.sh)"
  id munge >/dev/null 2>&1 || die "there is no 'munge' user: install the munge package"
  if [ ! -s /etc/munge/munge.key ]; then
    note "creating /etc/munge/munge.key"
    install -d -o munge -g munge -m 0700 /etc/munge
    if command -v mungekey >/dev/null; then
      mungekey --create --keyfile=/etc/munge/munge.key
    elif command -v create-munge-key >/dev/null; then
      create-munge-key -f
    else
      dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  # A stale pid file or socket from a killed munged makes the new one refuse to start.
  local old
  old="$(read_pid /run/munge/munged.pid)"
  if [ -n "$old" ] && ! pid_alive "$old"; then
    rm -f /run/munge/munged.pid /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock
  fi
  runuser -u munge -- /usr/sbin/munged || die "munged failed to start; see /var/log/munge/munged.log"
  local i
  for ((i = 0; i < 50; i++)); do
    if munge_works; then
      # Remember that this script started it, so stop can end it again.
      read_pid /run/munge/munged.pid >"$dir/munged.pid"
      return 0
    fi
    sleep 0.1
  done
  tail -n 20 /var/log/munge/munged.log >&2 2>/dev/null || true
  die "munged started but 'munge -n | unmunge' still fails"
}

# Merges k=v items (comma-separated lists or single items) into one comma-separated list: a later
# item replaces an earlier one with the same key, in place; items without '=' are flags.
merge_kv() {
  local -a items=()
  local arg item i found
  for arg in "$@"; do
    local IFS=','
    for item in $arg; do
      [ -n "$item" ] || continue
      found=0
      for i in "${!items[@]}"; do
        if [ "${items[$i]%%=*}" = "${item%%=*}" ]; then
          items[i]="$item"
          found=1
        fi
      done
      [ $found -eq 1 ] || items+=("$item")
    done
  done
  local IFS=','
  echo "${items[*]}"
}

# The installed Slurm's release as one number, 2205 for 22.05.8 (slurmctld -V: "slurm 22.05.8").
slurm_series() {
  local v
  v="$(slurmctld -V 2>/dev/null | awk '{ print $2 }')"
  [[ "$v" =~ ^([0-9]+)\.([0-9]+)\. ]] || die "cannot tell the Slurm release from 'slurmctld -V' ($v)"
  echo $((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]}))
}

# Takes the machine's test-cluster lock and hands it to a holder process that outlives this script:
# it lets go at stop, or once slurmctld has been gone for two minutes (a run that never stopped).
take_lock() {
  local holder
  holder="$(read_pid "$dir/lock-holder.pid")"
  # A caller that holds the lock itself (a runner around several clusters) says so.
  [ -z "${MIRAGE_SLURM_LOCK_HELD:-}" ] || return 0
  # This directory's cluster holds it already.
  if pid_alive "$holder" && [ "$(cat "/proc/$holder/comm" 2>/dev/null)" = bash ]; then return 0; fi
  exec 9>>"$lock_file"
  if ! flock -n 9; then
    note "waiting up to ${lock_wait}s for $lock_file: another Slurm test cluster runs on this machine"
    flock -w "$lock_wait" 9 || die "$lock_file is still held after ${lock_wait}s by another test cluster (fuser $lock_file names it); stop it or raise MIRAGE_SLURM_LOCK_WAIT"
  fi
  MIRAGE_CTLD_PID_FILE="$dir/run/slurmctld.pid" setsid bash -c '
    gone=0
    while [ $gone -lt 120 ]; do
      sleep 2
      pid="$(cat "$MIRAGE_CTLD_PID_FILE" 2>/dev/null | tr -dc 0-9)"
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then gone=0; else gone=$((gone + 2)); fi
    done' </dev/null >/dev/null 2>&1 &
  echo $! >"$dir/lock-holder.pid"
  exec 9>&-
}

release_lock() {
  local holder
  holder="$(read_pid "$dir/lock-holder.pid")"
  if pid_alive "$holder" && [ "$(cat "/proc/$holder/comm" 2>/dev/null)" = bash ]; then
    kill -TERM -- "-$holder" 2>/dev/null || true  # its group: the sleep it waits on holds the lock too
  fi
  rm -f "$dir/lock-holder.pid"
}

write_config() {
  local last_port=$((node_port + nodes - 1))
  local sched
  sched="$(merge_kv "bf_interval=1,sched_interval=1,bf_resolution=1,bf_window=30,bf_max_job_test=500" \
    "${sched_overrides[@]+"${sched_overrides[@]}"}")"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/out"
  local i
  for ((i = 0; i < 4; i++)); do : >"$dir/fakegpu$i"; done

  # Slurm 23.02 dropped switch/none (no switch plugin is the default) and 23.11 CryptoType
  # (credentials are signed by the auth plugin); older releases need both named.
  local release crypto_line="" switch_line=""
  release="$(slurm_series)"
  [ "$release" -ge 2311 ] || crypto_line="CryptoType=crypto/munge"
  [ "$release" -ge 2302 ] || switch_line="SwitchType=switch/none"

  local noderange="n[1-$nodes]"
  [ "$nodes" -gt 1 ] || noderange="n1"
  local portrange="$node_port-$last_port"
  [ "$nodes" -gt 1 ] || portrange="$node_port"

  cat >"$conf.tmp" <<EOF
# Written by tests/slurm/cluster.sh; edits are lost on the next start.
ClusterName=mirage-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
$crypto_line
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$switch_line
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdSpoolDir=$dir/spool/%n
SlurmctldDebug=info
SlurmdDebug=info
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
ReturnToService=2
SlurmctldTimeout=300
SlurmdTimeout=300
InactiveLimit=0
MinJobAge=2
ScronParameters=enable
KillWait=1
WaitTime=0
MaxJobCount=100000
PriorityType=priority/multifactor
# Slurm 22.05 ignores PriorityWeightAge without SlurmDBD ("can only be used with SlurmDBD"), and
# this cluster has no accounting daemon unless started with --accounting: the age factor is 0
# then, say so rather than pretend.
PriorityWeightAge=0
PriorityWeightJobSize=1000
PriorityWeightFairshare=0
PriorityWeightPartition=0
PriorityWeightQOS=0
PriorityMaxAge=60
PriorityCalcPeriod=1
PriorityFavorSmall=NO
SchedulerType=sched/backfill
SchedulerParameters=$sched
NodeName=$noderange NodeHostname=localhost Port=$portrange CPUs=2 RealMemory=2000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
EOF

  # With accounting, what only slurmdbd makes work; --conf overrides still win.
  local -a accounting_conf=()
  if [ "$accounting" -eq 1 ]; then
    accounting_conf=(AccountingStorageType=accounting_storage/slurmdbd AccountingStorageHost=localhost
      "AccountingStoragePort=$dbd_port" AccountingStorageEnforce=associations,limits,qos
      PriorityWeightAge=1000 PriorityWeightFairshare=10000 PriorityWeightQOS=1000
      PriorityDecayHalfLife=0-1)
  fi

  # Key=Value overrides: replace the key's line, or append it.
  local kv key
  for kv in "${accounting_conf[@]+"${accounting_conf[@]}"}" "${conf_overrides[@]+"${conf_overrides[@]}"}"; do
    [[ "$kv" == *=* ]] || die "--conf expects Key=Value, got '$kv'"
    key="${kv%%=*}"
    if [ "$key" = "SchedulerParameters" ]; then
      die "use --sched-param k=v (or MIRAGE_SLURM_SCHED_PARAMS) for SchedulerParameters"
    fi
    if grep -q "^$key=" "$conf.tmp"; then
      awk -v key="$key" -v line="$kv" 'index($0, key "=") == 1 { print line; next } { print }' \
        "$conf.tmp" >"$conf.tmp2"
      mv "$conf.tmp2" "$conf.tmp"
    else
      # Before the node and partition lines, which must come last.
      awk -v line="$kv" '/^NodeName=/ && !done { print line; done = 1 } { print }' \
        "$conf.tmp" >"$conf.tmp2"
      mv "$conf.tmp2" "$conf.tmp"
    fi
  done
  mv "$conf.tmp" "$conf"

  # From 24.05 slurmd sets up a cgroup plugin even for proctrack/linuxproc, and fails where no
  # cgroup file system is delegated to it (a container, a chroot): this cluster needs none.
  rm -f "$dir/cgroup.conf"
  [ "$release" -lt 2405 ] || echo "CgroupPlugin=disabled" >"$dir/cgroup.conf"

  cat >"$dir/gres.conf" <<EOF
# Written by tests/slurm/cluster.sh: four empty files stand in for GPUs (without File= the node
# registers no GPU and is drained).
NodeName=$noderange Name=gpu File=$dir/fakegpu[0-3]
EOF
}

# The state of every node as "name state" lines, or nothing when slurmctld does not answer.
node_states() { timeout 10 sinfo -h -N -o '%N %T' 2>/dev/null | sort -u || true; }

show_logs() {
  local f
  for f in "$dir/log/slurmctld.log" "$dir"/log/slurmd-*.log; do
    [ -f "$f" ] || continue
    echo "---- tail of $f" >&2
    tail -n 25 "$f" >&2 || true
  done
}

# MariaDB for slurmdbd, private to this cluster: its data in $dir/mysql, listening on 127.0.0.1.
start_mariadb() {
  command -v mariadbd >/dev/null || die "mariadbd not found: install mariadb-server (scripts/install-deps.sh)"
  if [ ! -d "$dir/mysql/mysql" ]; then
    mariadb-install-db --user=root --datadir="$dir/mysql" --auth-root-authentication-method=normal \
      --skip-test-db >"$dir/log/mariadb-install.log" 2>&1 ||
      die "mariadb-install-db failed; see $dir/log/mariadb-install.log"
  fi
  setsid mariadbd --no-defaults --user=root --datadir="$dir/mysql" --socket="$dir/run/mysql.sock" \
    --port="$db_port" --bind-address=127.0.0.1 --pid-file="$dir/run/mariadb.pid" \
    --log-error="$dir/log/mariadb.log" --innodb-buffer-pool-size=64M \
    --innodb-lock-wait-timeout=900 </dev/null >/dev/null 2>&1 &
  local i
  for ((i = 0; i < 300; i++)); do
    mariadb --no-defaults --socket="$dir/run/mysql.sock" -u root -e 'select 1' >/dev/null 2>&1 && break
    sleep 0.1
  done
  # The database is made here, not by slurmdbd: Slurm 24.11 makes it after a failed connect and
  # then reuses that connection, which MariaDB 11.8's client library (Debian 13) no longer reads
  # results on ("Number of columns in result (=1) set exceeds maximum allowed number of columns
  # (=0)", and slurmdbd stops: "_check_mysql_concat_is_sane: null result from query").
  mariadb --no-defaults --socket="$dir/run/mysql.sock" -u root -e "
    CREATE DATABASE IF NOT EXISTS slurm_acct_db;
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'mirage-test';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" >/dev/null 2>&1 || {
    tail -n 20 "$dir/log/mariadb.log" >&2 2>/dev/null || true
    die "MariaDB did not start; see $dir/log/mariadb.log"
  }
}

start_slurmdbd() {
  command -v slurmdbd >/dev/null || die "slurmdbd not found: install slurmdbd (scripts/install-deps.sh)"
  # slurmdbd reads slurmdbd.conf beside slurm.conf; it holds a password, so only root may read it.
  (
    umask 077
    cat >"$dir/slurmdbd.conf" <<EOF
# Written by tests/slurm/cluster.sh --accounting; edits are lost on the next start.
AuthType=auth/munge
DbdHost=localhost
DbdPort=$dbd_port
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StoragePass=mirage-test
StorageLoc=slurm_acct_db
EOF
  )
  slurmdbd || {
    tail -n 20 "$dir/log/slurmdbd.log" >&2 2>/dev/null || true
    die "slurmdbd failed to start"
  }
  local i
  for ((i = 0; i < 300; i++)); do
    timeout 5 sacctmgr -n list cluster >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  tail -n 20 "$dir/log/slurmdbd.log" >&2 2>/dev/null || true
  die "slurmdbd does not answer sacctmgr"
}

# The associations and QOS the accounting tests use (see the header).
create_associations() {
  local -a s=(timeout 20 sacctmgr -i -Q)
  "${s[@]}" add cluster mirage-test >/dev/null
  "${s[@]}" add qos capped MaxTRESPerUser=node=1 >/dev/null
  "${s[@]}" add account big Fairshare=70 Description=big Organization=mirage >/dev/null
  "${s[@]}" add account small Fairshare=30 Description=small Organization=mirage >/dev/null
  "${s[@]}" add user root Account=big,small DefaultAccount=big >/dev/null
  "${s[@]}" modify user root set QOS+=capped >/dev/null
}

cmd_start() {
  [ "$(id -u)" -eq 0 ] || die "must run as root (SlurmUser=root, munged as the munge user)"
  local b
  for b in slurmctld slurmd sinfo sbatch scontrol munged; do
    command -v "$b" >/dev/null || die "'$b' not found: install slurmctld slurmd slurm-client munge (scripts/install-deps.sh)"
  done
  mkdir -p "$dir"
  # A previous cluster in the same directory is stopped first, so start is repeatable.
  if [ -f "$dir/run/slurmctld.pid" ] || compgen -G "$dir/run/slurmd-*.pid" >/dev/null; then
    note "stopping the cluster already running in $dir"
    cmd_stop_daemons
  fi
  take_lock
  # A cluster from another directory on the same ports cannot coexist with this one.
  if (exec 3<>"/dev/tcp/127.0.0.1/$ctld_port") 2>/dev/null; then
    die "port $ctld_port is in use (another slurmctld?); stop it or pass --ctld-port"
  fi
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/run" "$dir/mysql"
  rm -f "$dir/jobcomp.txt" "$dir/slurmdbd.conf"
  write_config
  start_munge
  if [ "$accounting" -eq 1 ]; then
    note "starting MariaDB (127.0.0.1:$db_port) and slurmdbd (port $dbd_port)"
    start_mariadb
    start_slurmdbd
    create_associations
  fi

  note "starting slurmctld (SLURM_CONF=$conf)"
  slurmctld -f "$conf" -c -i || {
    show_logs
    die "slurmctld failed to start"
  }
  local n
  for n in $(node_list); do
    mkdir -p "$dir/spool/$n"
    slurmd -f "$conf" -N "$n" || {
      show_logs
      die "slurmd -N $n failed to start"
    }
  done

  local deadline=$((SECONDS + start_timeout)) states idle
  while :; do
    states="$(node_states)"
    idle="$(awk '$2 == "idle" { c++ } END { print c + 0 }' <<<"$states")"
    [ "$idle" -eq "$nodes" ] && break
    if [ $SECONDS -ge $deadline ]; then
      echo "node states after ${start_timeout}s:" >&2
      echo "${states:-  (slurmctld does not answer)}" >&2
      show_logs
      die "not all $nodes nodes became idle within ${start_timeout}s"
    fi
    # Nodes that registered drained (e.g. a GRES mismatch) stay down: say so early.
    if grep -qE ' (drain|drained|down\*?)$' <<<"$states" && [ $((deadline - SECONDS)) -lt $((start_timeout / 2)) ]; then
      scontrol show node 2>/dev/null | grep -E 'NodeName|Reason' >&2 || true
    fi
    sleep 0.5
  done
  note "cluster up in $dir: $nodes nodes idle, gpu:4 each (ctld port $ctld_port)"
  echo "export SLURM_CONF=$conf"
}

cmd_stop_daemons() {
  local f n i
  # Jobs still queued or running are cancelled first, so that no batch step outlives its slurmd.
  if pid_alive "$(read_pid "$dir/run/slurmctld.pid")" && [ -f "$conf" ]; then
    local ids
    ids="$(timeout 10 squeue -h -o %i 2>/dev/null || true)"
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $ids 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null || true)" ] && break
        sleep 0.2
      done
    fi
  fi
  # Nodes first (they report completions to the controller), then the controller.
  for f in "$dir"/run/slurmd-*.pid; do
    [ -e "$f" ] || continue
    stop_pidfile "$f" slurmd
  done
  for n in $(configured_nodes); do
    stop_pidfile "$dir/run/slurmd-$n.pid" slurmd
  done
  stop_pidfile "$dir/run/slurmctld.pid" slurmctld
  stop_pidfile "$dir/run/slurmdbd.pid" slurmdbd
  stop_pidfile "$dir/run/mariadb.pid" mariadbd
}

cmd_stop() {
  cmd_stop_daemons
  # munged is shared by every cluster on the machine: end it only if this script started it and
  # no other slurmctld or slurmd (another cluster directory) still needs it.
  if [ -f "$dir/munged.pid" ]; then
    if pgrep -x slurmctld >/dev/null 2>&1 || pgrep -x slurmd >/dev/null 2>&1; then
      note "munged left running: other Slurm daemons on this machine still use it"
      rm -f "$dir/munged.pid"
    else
      stop_pidfile "$dir/munged.pid" munged
    fi
  fi
  release_lock
  note "stopped the cluster in $dir"
}

cmd_status() {
  local rc=0 f pid n
  if [ ! -f "$conf" ]; then
    echo "no cluster configured in $dir"
    return 3
  fi
  pid="$(read_pid "$dir/run/slurmctld.pid")"
  if pid_alive "$pid"; then echo "slurmctld: running (pid $pid)"; else echo "slurmctld: stopped"; rc=3; fi
  for n in $(configured_nodes); do
    f="$dir/run/slurmd-$n.pid"
    pid="$(read_pid "$f")"
    if pid_alive "$pid"; then echo "slurmd $n: running (pid $pid)"; else echo "slurmd $n: stopped"; rc=3; fi
  done
  if munge_works; then echo "munged: running"; else echo "munged: not answering"; rc=3; fi
  if [ -f "$dir/slurmdbd.conf" ]; then
    pid="$(read_pid "$dir/run/slurmdbd.pid")"
    if pid_alive "$pid"; then echo "slurmdbd: running (pid $pid)"; else echo "slurmdbd: stopped"; rc=3; fi
  fi
  if [ $rc -eq 0 ]; then
    timeout 10 sinfo -N -o '%N %T %G' || rc=3
  fi
  return $rc
}

case "$cmd" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$conf" ;;
  -h | --help | help) usage ;;
  *) die "unknown command '$cmd': use start, stop, status or env" ;;
esac
