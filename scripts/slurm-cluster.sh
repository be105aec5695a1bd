#!/usr/bin/env bash
# A single-node Slurm cluster in a scratch folder, for goodput's Slurm test and for
# trying `goodput slurm --submit` on one machine:
#
#   scripts/slurm-cluster.sh start [DIR]   # prints SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-cluster.sh stop  [DIR]   # stops what start started, removes nothing else
#
# DIR defaults to $GOODPUT_SLURM_DIR or /tmp/goodput-slurm. Needs root and Debian's
# slurm-wlm and munge (`apt-get install slurm-wlm munge`; scripts/test.sh installs
# them). What it sets up, found to work in a container without cgroups:
#   - its own munged, as user munge, with the package's key (/etc/munge/munge.key,
#     owner munge, mode 400; made when missing) and its socket in DIR/munge;
#   - a slurm.conf with SlurmctldHost and one NodeName equal to `hostname`,
#     proctrack/linuxproc, task/none, jobacct_gather/none, select/cons_tres,
#     accounting off, state and spool folders in DIR, non-default ports
#     ($GOODPUT_SLURM_PORT, 16817 by default, and $GOODPUT_SLURMD_PORT, the next);
#   - slurmctld and slurmd as root; start waits (at most 60 s) for `sinfo` to show
#     the node idle.
# Every daemon is stopped by the pid it wrote in DIR.
set -euo pipefail

cmd=${1:-}
dir=${2:-${GOODPUT_SLURM_DIR:-/tmp/goodput-slurm}}
port=${GOODPUT_SLURM_PORT:-16817}
dport=${GOODPUT_SLURMD_PORT:-$((port + 1))}
conf="$dir/slurm.conf"

die() { echo "slurm-cluster: $*" >&2; exit 1; }

stop_pidfile() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

start() {
  [ "$(id -u)" = 0 ] || die "must run as root (slurmd runs jobs as their users)"
  for p in slurmctld slurmd sinfo munged; do
    command -v "$p" >/dev/null || die "$p is missing: apt-get install -y slurm-wlm munge"
  done
  mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
  chown munge:munge "$dir/munge"
  chmod 0755 "$dir/munge"
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 0400 /etc/munge/munge.key
  local sock="$dir/munge/munge.socket"
  if [ ! -S "$sock" ]; then
    runuser -u munge -- munged --socket="$sock" --pid-file="$dir/munge/munged.pid" \
      --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  fi
  local host cpus
  host=$(hostname)
  cpus=$(nproc)
  cat >"$conf" <<CONF
# Written by scripts/slurm-cluster.sh: a single-node cluster for tests.
ClusterName=goodput-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$dport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=10
InactiveLimit=0
MinJobAge=300
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF="$conf"
  [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null || slurmctld -f "$conf"
  [ -f "$dir/slurmd.pid" ] && kill -0 "$(cat "$dir/slurmd.pid")" 2>/dev/null || slurmd -f "$conf"
  for _ in $(seq 120); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qx 'idle'; then
      echo "SLURM_CONF=$conf"
      return 0
    fi
    sleep 0.5
  done
  echo "slurm-cluster: the node did not become idle within 60 s; logs:" >&2
  tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/munge/munged.log" >&2 || true
  exit 1
}

stop() {
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
  rm -f "$dir/munge/munge.socket" "$dir/munge/munge.socket.lock"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) die "usage: $0 start|stop [DIR]" ;;
esac
