#!/usr/bin/env bash
# Starts a one-node SLURM cluster on this machine for runners/slurm's tests:
# Debian's slurm-wlm 22.05 and munge, with no systemd, no cgroups, no
# database and nothing beyond loopback. Idempotent and fast when the
# cluster already answers: run it (as root) before `go test ./runners/slurm/`.
#
# Without slurmdbd there is no job accounting: sacct answers "Slurm
# accounting storage is disabled". The runner tracks jobs with
# `squeue -t all`, which lists finished jobs with their state and exit
# status for MinJobAge seconds (600 here), and judges jobs that left the
# queue by their completion markers (see doc.go).
#
# The node is the machine's real CPUs and memory. Its partition lets up
# to 8 jobs share a core (OverSubscribe=FORCE:8) so that the tests' many
# tiny array tasks (sleep 0.x) do not queue behind 2 cores, and the
# scheduler runs at once on every job end (sched_min_interval=0,
# batch_sched_delay=0) instead of every few seconds.
set -euo pipefail

log() { echo "slurm setup: $*"; }

if [ "$(id -u)" != 0 ]; then
	echo "slurm setup: must run as root (apt-get, daemons)" >&2
	exit 1
fi

if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
	log "installing slurm-wlm and munge"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

host=$(hostname -s)
cpus=$(nproc --all)
# RealMemory in MiB, a little under the total so slurmd does not drain the
# node for having less than it announced.
mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.95 }' /proc/meminfo)

# munge: a key of 1024 random bits, readable by munge only.
if [ ! -s /etc/munge/munge.key ]; then
	log "creating the munge key"
	install -d -o munge -g munge -m 0700 /etc/munge
	dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none
	chown munge:munge /etc/munge/munge.key
	chmod 0400 /etc/munge/munge.key
fi
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge

conf=$(cat <<CONF
# Written by runners/slurm/testdata/setup.sh: a one-node test cluster.
ClusterName=lacuna
SlurmctldHost=${host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ReturnToService=2
MinJobAge=600
KillWait=5
SchedulerType=sched/backfill
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0
MaxArraySize=1001
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=${host} Default=YES MaxTime=INFINITE OverSubscribe=FORCE:8 State=UP
CONF
)

install -d -m 0755 /etc/slurm /run/slurm /var/log/slurm /var/spool/slurmctld /var/spool/slurmd
changed=0
if [ ! -f /etc/slurm/slurm.conf ] || [ "$(cat /etc/slurm/slurm.conf)" != "$conf" ]; then
	log "writing /etc/slurm/slurm.conf (node ${host}: ${cpus} CPUs, ${mem} MiB)"
	printf '%s\n' "$conf" >/etc/slurm/slurm.conf
	changed=1
fi

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

if ! pgrep -x munged >/dev/null; then
	log "starting munged"
	runuser -u munge -- /usr/sbin/munged
fi
for i in $(seq 50); do munge -n </dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done

if [ "$changed" = 1 ]; then
	for d in slurmd slurmctld; do
		if running /run/slurm/$d.pid; then
			log "stopping $d (configuration changed)"
			kill "$(cat /run/slurm/$d.pid)"
			for i in $(seq 100); do running /run/slurm/$d.pid || break; sleep 0.1; done
		fi
	done
fi
if ! running /run/slurm/slurmctld.pid; then
	log "starting slurmctld"
	slurmctld
fi
if ! running /run/slurm/slurmd.pid; then
	log "starting slurmd"
	slurmd
fi

# Wait for the node to be idle (or mixed/allocated when tests already run).
for i in $(seq 300); do
	state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null || true)
	case "$state" in
	idle | mixed | allocated | completing)
		log "node ${host} is ${state}"
		exit 0
		;;
	down* | drain* | *'*')
		scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
		;;
	esac
	sleep 0.2
done
echo "slurm setup: node ${host} did not become idle (state: ${state:-none}); see /var/log/slurm/" >&2
tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
