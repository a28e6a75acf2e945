#!/bin/sh
# The private Slurm of tests/slurm/start.sh works: a 2-node batch job
# completes, srun reaches all 4 nodes, slurmrestd answers a ping over its
# unix socket (as its own user), and stop.sh leaves nothing running.
. "$top_srcdir/tests/slurm/lib.sh"

check "4 nodes idle" "$(sinfo -h -N -o '%N %t' | sort -u | tr '\n' ' ')" \
    "node1 idle node2 idle node3 idle node4 idle "

# sbatch -N2: COMPLETED within 30 s, on two nodes.
job=$(cd "$work" && sbatch --parsable -N2 -o "$work/out-%j" --wrap hostname)
case $job in
''|*[!0-9]*) fail "sbatch --parsable printed '$job'" ;;
*)
	completed() {
		scontrol show job "$job" | grep -q 'JobState=COMPLETED'
	}
	if wait_for 30 completed; then
		pass "sbatch -N2 job $job COMPLETED"
	else
		fail "sbatch -N2 job $job: $(scontrol show job "$job" | grep JobState)"
	fi
	check "sbatch -N2 ran on" \
	    "$(scontrol show job "$job" | sed -n 's/^ *NodeList=//p')" "node[1-2]"
	;;
esac

# srun -N4: one task on each node.
got=$(cd "$work" && timeout 30 srun -N4 sh -c 'echo $SLURMD_NODENAME' | sort |
    tr '\n' ' ')
check "srun -N4 nodes" "$got" "node1 node2 node3 node4 "

# slurmrestd: only its own user may use a rest_auth/local socket.
got=$(runuser -u "$rest_user" -- curl -sS --max-time 10 \
    --unix-socket "$rest_sock" http://localhost/slurm/v0.0.38/ping |
    tr -d ' \n' | grep -o '"ping":"UP"')
check "slurmrestd ping" "$got" '"ping":"UP"'

# stop.sh: every daemon gone.
pids=$(cat "$slurm"/run/*.pid "$slurm/munge/munged.pid" 2>/dev/null)
sh "$top_srcdir/tests/slurm/stop.sh" "$slurm"
started=0
alive=
for p in $pids; do
	kill -0 "$p" 2>/dev/null && alive="$alive $p"
done
check "stop.sh stopped every daemon" "$alive" ""

exit $failed
