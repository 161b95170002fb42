#!/usr/bin/env bash
# A real single-node Slurm cluster for the tests, in a scratch folder, started and stopped by PID.
#
#   cluster.sh up DIR     start munged, slurmctld and slurmd; prints `export SLURM_CONF=...`
#   cluster.sh down DIR   stop them (slurmd, slurmctld, munged), each by the PID recorded in DIR
#
# Needs Debian's slurm-wlm and munge (.ci/run installs them) and root (the daemons run as root;
# munged as the munge user). Settings as measured in ../shared/notes/slurm.md: no accounting,
# no cgroups, array tasks start without delay, and an afterok job whose dependency failed is
# cancelled (kill_invalid_depend) instead of pending forever.
set -euo pipefail

cmd=${1:?usage: cluster.sh up|down DIR}
dir=${2:?usage: cluster.sh up|down DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

stop() {
  local name=$1 pidfile="$dir/$1.pid"
  [ -f "$pidfile" ] || return 0
  local pid
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

case "$cmd" in
down)
  stop slurmd
  stop slurmctld
  stop munged
  exit 0
  ;;
up) ;;
*) echo "cluster.sh: unknown command $cmd (up or down)" >&2; exit 2 ;;
esac

for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || { echo "cluster.sh: $tool not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "cluster.sh: the daemons need root" >&2; exit 3; }

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chown munge:munge "$dir/munge"
# munged's socket in the scratch folder: several clusters (or a system munged) never collide
socket="$dir/munge/munge.socket.2"
cpus=$(nproc)
cat > "$dir/slurm.conf" <<CONF
ClusterName=sagetest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
DependencyParameters=kill_invalid_depend
ReturnToService=2
MinJobAge=3600
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.daemon.pid
SlurmdPidFile=$dir/slurmd.daemon.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=$((20000 + RANDOM % 20000))
SlurmdPort=$((40000 + RANDOM % 20000))
MailProg=/bin/true
NodeName=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

runuser -u munge -- /usr/sbin/munged -F --socket="$socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" >"$dir/munged.out" 2>&1 &
echo $! > "$dir/munged.pid"
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { echo "cluster.sh: munged did not start: $(cat "$dir/munged.out")" >&2; exit 4; }

export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
slurmd -D -N localhost -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"
for _ in $(seq 100); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.1
done
if [ "$state" != idle ]; then
  echo "cluster.sh: the node is not idle after 10 s (state: ${state:-none}); logs in $dir" >&2
  "$0" down "$dir"
  exit 4
fi
echo "export SLURM_CONF=$SLURM_CONF"
