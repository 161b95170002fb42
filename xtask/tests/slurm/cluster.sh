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

# Ports below the kernel's ephemeral range, and unused right now. A port inside that range can
# be taken by any client connection (the other tests' sbatch and squeue calls make hundreds), and
# a slurmd that cannot bind its port never registers: the node stays "unknown".
read -r ephemeral_low ephemeral_high < /proc/sys/net/ipv4/ip_local_port_range
if [ "$ephemeral_low" -gt 12000 ]; then port_base=10000; port_span=$((ephemeral_low - 10000))
else port_base=$((ephemeral_high + 1)); port_span=$((65536 - port_base)); fi
# free_port [TAKEN]: a free port other than TAKEN
free_port() {
  local used="" port
  command -v ss >/dev/null && used=$(ss -Htan 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
  for _ in $(seq 100); do
    port=$((port_base + (RANDOM * 32768 + RANDOM) % port_span))
    [ "$port" != "${1:-}" ] && ! grep -qx "$port" <<<"$used" && { echo "$port"; return; }
  done
  echo "cluster.sh: no free port in $port_base..$((port_base + port_span - 1))" >&2
  return 1
}

write_conf() {
  local ctld_port slurmd_port
  ctld_port=$(free_port) || return 1
  slurmd_port=$(free_port "$ctld_port") || return 1
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
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
MailProg=/bin/true
NodeName=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}

runuser -u munge -- /usr/sbin/munged -F --socket="$socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" >"$dir/munged.out" 2>&1 &
echo $! > "$dir/munged.pid"
for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { echo "cluster.sh: munged did not start: $(cat "$dir/munged.out")" >&2; stop munged; exit 4; }

export SLURM_CONF="$dir/slurm.conf"
# Waits for the node to be idle; fails at once when a daemon exits (a port taken between the
# check and the bind), so the caller can try fresh ports.
start_slurm() {
  write_conf || return 1
  rm -rf "$dir/state" && mkdir -p "$dir/state"
  slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
  echo $! > "$dir/slurmctld.pid"
  slurmd -D -N localhost -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
  echo $! > "$dir/slurmd.pid"
  state=""
  # a loaded 2-core machine (other tests running sage) can take seconds to register the node
  for _ in $(seq 300); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && return 0
    for daemon in slurmctld slurmd; do
      kill -0 "$(cat "$dir/$daemon.pid")" 2>/dev/null || { state="${state:-none}, $daemon exited"; return 1; }
    done
    sleep 0.1
  done
  return 1
}

for attempt in 1 2 3; do
  start_slurm && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
  stop slurmd
  stop slurmctld
  echo "cluster.sh: attempt $attempt: the node is not idle (state: ${state:-none})" >&2
done
{
  echo "cluster.sh: the node did not become idle in 3 attempts; logs in $dir"
  for log in slurmctld.log slurmd.log slurmd.out; do
    echo "--- last lines of $log:"
    tail -n 8 "$dir/$log" 2>/dev/null || true
  done
} >&2
stop munged
exit 4
