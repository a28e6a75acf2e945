#!/bin/sh
# Stops what tests/slurm/start.sh DIR started, by the pids it recorded:
#   tests/slurm/stop.sh DIR
# Waits (bounded) for each to exit, then SIGKILLs what is left.
set -u

[ $# -eq 1 ] || { echo "usage: stop.sh DIR" >&2; exit 2; }
dir=$1
[ -d "$dir" ] || exit 0

# Jobs first, so that no slurmstepd outlives its slurmd.
if [ -f "$dir/slurm.conf" ] && [ -f "$dir/run/slurmctld.pid" ]; then
	SLURM_CONF=$dir/slurm.conf
	export SLURM_CONF
	jobs=$(squeue -h -o %i 2>/dev/null) || jobs=
	if [ -n "$jobs" ]; then
		# shellcheck disable=SC2086
		scancel $jobs 2>/dev/null || true
		n=0
		while [ -n "$(squeue -h -t R,CG,PD,S -o %i 2>/dev/null)" ] &&
		    [ $n -lt 150 ]; do
			n=$((n + 1))
			sleep 0.1
		done
	fi
fi

pids=
for f in "$dir/run/slurmrestd.pid" "$dir"/run/slurmd-*.pid \
    "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"; do
	[ -f "$f" ] || continue
	pid=$(cat "$f" 2>/dev/null) || continue
	case $pid in ''|*[!0-9]*) continue ;; esac
	kill -TERM "$pid" 2>/dev/null && pids="$pids $pid"
done
# runuser leaves slurmrestd as its child; runuser passes SIGTERM on
n=0
for pid in $pids; do
	while kill -0 "$pid" 2>/dev/null && [ $n -lt 100 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
done
exit 0
