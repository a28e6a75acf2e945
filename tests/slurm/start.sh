#!/bin/sh
# Starts a private 4-node Slurm on this machine, all of its state under DIR:
#   tests/slurm/start.sh DIR
# munged (as the munge user, its own socket), slurmctld, slurmd node1..node4
# on 127.0.1.1..4, and slurmrestd as an unprivileged user on a unix socket.
# Ports: CADRE_SLURM_PORT (default 17000) for slurmctld, +1..+4 for the
# slurmds. Installs nothing (scripts/deps install does); needs root.
# Afterwards, for clients:
#   SLURM_CONF=DIR/slurm.conf           (also written to DIR/env)
#   DIR/rest/rest.sock                  slurmrestd, for user $(cat DIR/rest-user)
# tests/slurm/stop.sh DIR stops everything this started.
set -eu

die() { echo "start.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: start.sh DIR"
[ "$(id -u)" -eq 0 ] || die "needs root (slurmd and munged)"
for p in munged slurmctld slurmd slurmrestd sinfo scontrol; do
	command -v "$p" >/dev/null 2>&1 ||
	    die "$p not found: install slurm-wlm munge slurmrestd (scripts/deps install)"
done
getent passwd munge >/dev/null || die "no munge user: install munge"

dir=$(cd "$1" && pwd) || die "no directory $1"
port=${CADRE_SLURM_PORT:-17000}
rest_user=${CADRE_SLURM_REST_USER:-cadre-rest}
host=$(hostname)
# bounded waits, in tenths of a second
wait_ctld=${CADRE_SLURM_WAIT:-300}

# The munge user and the REST user must reach their files under DIR.
chmod 0755 "$dir"
mkdir -p "$dir/munge" "$dir/state" "$dir/log" "$dir/run" "$dir/spool" \
    "$dir/rest"
chmod 0755 "$dir/state" "$dir/log" "$dir/run" "$dir/spool"

# ---------------------------------------------------------------- munge
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chown -R munge:munge "$dir/munge"
chmod 0700 "$dir/munge"
chmod 0400 "$dir/munge/munge.key"
# munged checks that the socket's directory is its own and not writable by
# others; clients (slurmrestd as another user) connect through it.
chmod 0755 "$dir/munge"
runuser -u munge -- munged \
    --key-file="$dir/munge/munge.key" \
    --socket="$dir/munge/munge.socket" \
    --log-file="$dir/munge/munged.log" \
    --pid-file="$dir/munge/munged.pid" \
    --seed-file="$dir/munge/munged.seed" ||
    die "munged did not start: see $dir/munge/munged.log"

# ---------------------------------------------------------------- slurm.conf
{
	echo "# written by tests/slurm/start.sh"
	echo "ClusterName=cadretest"
	echo "SlurmctldHost=$host(127.0.0.1)"
	echo "SlurmctldPort=$port"
	echo "SlurmdPort=$((port + 1))"
	echo "SlurmUser=root"
	echo "SlurmdUser=root"
	echo "AuthType=auth/munge"
	echo "CredType=cred/munge"
	echo "AuthInfo=socket=$dir/munge/munge.socket"
	echo "StateSaveLocation=$dir/state"
	echo "SlurmdSpoolDir=$dir/spool/%n"
	echo "SlurmctldPidFile=$dir/run/slurmctld.pid"
	echo "SlurmdPidFile=$dir/run/slurmd-%n.pid"
	echo "SlurmctldLogFile=$dir/log/slurmctld.log"
	echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
	echo "SlurmctldDebug=info"
	echo "SlurmdDebug=info"
	echo "AccountingStorageType=accounting_storage/none"
	echo "JobAcctGatherType=jobacct_gather/none"
	echo "JobCompType=jobcomp/none"
	echo "ProctrackType=proctrack/linuxproc"
	echo "TaskPlugin=task/none"
	echo "SelectType=select/cons_tres"
	echo "SelectTypeParameters=CR_Core"
	echo "SchedulerType=sched/backfill"
	echo "MpiDefault=none"
	echo "ReturnToService=2"
	echo "SrunPortRange=$((port + 100))-$((port + 199))"
	# quick reactions for tests: kill soon after the limit, forget
	# finished jobs after MinJobAge (the daemon must not need them)
	echo "KillWait=2"
	echo "OverTimeLimit=0"
	echo "MinJobAge=${CADRE_SLURM_MIN_JOB_AGE:-300}"
	echo "InactiveLimit=0"
	echo "SlurmctldTimeout=30"
	echo "SlurmdTimeout=60"
	k=1
	while [ $k -le 4 ]; do
		echo "NodeName=node$k NodeHostname=$host NodeAddr=127.0.1.$k Port=$((port + k)) CPUs=2 RealMemory=500 State=UNKNOWN"
		k=$((k + 1))
	done
	echo "PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=INFINITE State=UP"
	# a partition with a time limit, for validate's preflight
	echo "PartitionName=short Nodes=node[1-4] MaxTime=30 State=UP"
} > "$dir/slurm.conf"
chmod 0644 "$dir/slurm.conf"
SLURM_CONF=$dir/slurm.conf
export SLURM_CONF
echo "SLURM_CONF=$SLURM_CONF; export SLURM_CONF" > "$dir/env"

# ---------------------------------------------------------------- daemons
slurmctld -i -f "$SLURM_CONF" ||
    die "slurmctld did not start: see $dir/log/slurmctld.log"
n=0
until scontrol ping 2>/dev/null | grep -q 'is UP'; do
	n=$((n + 1))
	[ $n -le "$wait_ctld" ] || die "slurmctld does not answer: see $dir/log/slurmctld.log"
	sleep 0.1
done
k=1
while [ $k -le 4 ]; do
	mkdir -p "$dir/spool/node$k"
	slurmd -f "$SLURM_CONF" -N "node$k" ||
	    die "slurmd node$k did not start: see $dir/log/slurmd-node$k.log"
	k=$((k + 1))
done
n=0
while :; do
	# a node in two partitions is listed twice: each node once
	idle=$(sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | grep -c ' idle$' || true)
	[ "$idle" -eq 4 ] && break
	n=$((n + 1))
	[ $n -le "$wait_ctld" ] || {
		sinfo -N >&2 || true
		die "the 4 nodes are not idle: see $dir/log/"
	}
	sleep 0.1
done

# ---------------------------------------------------------------- slurmrestd
# slurmrestd refuses to run as root; rest_auth/local trusts the peer
# credentials of its unix socket, so clients run as the same user.
if ! getent passwd "$rest_user" >/dev/null; then
	useradd --system --no-create-home --home-dir /nonexistent \
	    --shell /usr/sbin/nologin "$rest_user" ||
	    die "cannot create user $rest_user"
fi
chown "$rest_user" "$dir/rest"
chmod 0700 "$dir/rest"
echo "$rest_user" > "$dir/rest-user"
# no job control here: make the daemon its own process group by hand is
# not portable, so it is tracked by its pid
SLURM_CONF=$SLURM_CONF runuser -u "$rest_user" -- \
    slurmrestd -f "$SLURM_CONF" -s openapi/v0.0.38 -a rest_auth/local \
    "unix:$dir/rest/rest.sock" > "$dir/log/slurmrestd.log" 2>&1 </dev/null &
echo $! > "$dir/run/slurmrestd.pid"
n=0
until [ -S "$dir/rest/rest.sock" ]; do
	n=$((n + 1))
	kill -0 "$(cat "$dir/run/slurmrestd.pid")" 2>/dev/null ||
	    die "slurmrestd exited: see $dir/log/slurmrestd.log"
	[ $n -le "$wait_ctld" ] || die "slurmrestd has no socket: see $dir/log/slurmrestd.log"
	sleep 0.1
done
exit 0
