#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the scaling tests and for
# trying `evalhost run --shard auto` in a job array (docs/scaling.md).
#
#   scripts/slurm-local.sh start DIR [CTLD_PORT SLURMD_PORT]   # prints SLURM_CONF=DIR/slurm.conf
#   scripts/slurm-local.sh stop DIR
#
# Needs Debian's slurm-wlm (slurmctld, slurmd, munge) and root (the daemons
# run as root here; a real cluster runs them as the slurm user). Everything
# it writes is under DIR; munged is started only when none is running.
set -euo pipefail
cmd=${1:?usage: slurm-local.sh start|stop DIR [CTLD_PORT SLURMD_PORT]}
dir=${2:?usage: slurm-local.sh start|stop DIR [CTLD_PORT SLURMD_PORT]}
dir=$(cd "$dir" && pwd)
conf="$dir/slurm.conf"

stop() {
    for pid in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
        if [ -s "$pid" ]; then kill "$(cat "$pid")" 2>/dev/null || true; fi
    done
}

case "$cmd" in
stop)
    stop
    exit 0
    ;;
start) ;;
*)
    echo "usage: slurm-local.sh start|stop DIR [CTLD_PORT SLURMD_PORT]" >&2
    exit 2
    ;;
esac

for tool in slurmctld slurmd sbatch munged; do
    command -v "$tool" >/dev/null 2>&1 || { echo "slurm-local: $tool is not installed (apt-get install slurm-wlm)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "slurm-local: the daemons need root here" >&2; exit 3; }

if ! pgrep -x munged >/dev/null 2>&1; then
    [ -s /etc/munge/munge.key ] || { echo "slurm-local: /etc/munge/munge.key is missing (the munge package makes it)" >&2; exit 3; }
    mkdir -p /run/munge
    chown munge:munge /run/munge 2>/dev/null || true
    munged --force 2>/dev/null || munged
fi

ctld_port=${3:-6817}
slurmd_port=${4:-6818}
cpus=$(nproc)
mkdir -p "$dir/state" "$dir/spool"
cat >"$conf" <<CONF
ClusterName=evalhost-local
SlurmctldHost=localhost
AuthType=auth/munge
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeHostname=localhost CPUs=$cpus RealMemory=1000 State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF

export SLURM_CONF="$conf"
stop
slurmctld -f "$conf" -i
slurmd -f "$conf"
# Up when the node is idle (a few seconds).
for _ in $(seq 1 60); do
    if sinfo -h -o %t 2>/dev/null | grep -q idle; then
        echo "SLURM_CONF=$conf"
        exit 0
    fi
    sleep 0.5
done
echo "slurm-local: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log" >&2
stop
exit 4
