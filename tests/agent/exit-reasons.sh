#!/bin/sh
# launch's status.json reason from the ranks' exits (docs/contracts.md),
# over 2 agents and mpirun. A rank exiting 75 (the trainer checkpointed and
# stopped) -> preempted, resumable; exit 3 (out of memory) -> oom, not
# resumable; exit 74 (3 checkpoint writes failed) -> io; killed by a
# signal launch did not send -> node_fail, resumable, naming rank, node
# and signal; another exit -> failed, with the rank's last error line on
# stderr in the message.
. "$top_srcdir/tests/agent/lib.sh"
if ! command -v mpirun >/dev/null; then
	echo "$test_name: skipped: no Open MPI (mpirun)"
	exit 77
fi
# The rank program: rank 1 does what $1 says, rank 0 exits 0 or, with
# "wait", waits to be stopped.
cat >"$work/rankprog" <<'PROG'
#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then
	case $1 in
	exit)
		# what a Python program says before it dies: the error line,
		# then a launcher's decoration, which the reason skips
		if [ "$2" = 7 ]; then
			echo "Traceback (most recent call last):" >&2
			echo '  File "train.py", line 3, in <module>' >&2
			printf 'ValueError: shard 3: checksum mismatch\r\n' >&2
			echo "==========" >&2
		fi
		exit "$2" ;;
	kill) kill -"$2" $$ ;;
	esac
fi
[ "$3" = wait ] && exec sleep 60
exit 0
PROG
chmod +x "$work/rankprog"
"$agent" keygen --run-dir "$rd" || fail "keygen"

# run_case WHAT ARG [wait]: launch over node1-2; sets $rc.
run_case() {
	rm -f "$rd/status.json" "$rd"/log/rank-*.json
	start_agent "$rd" node1 127.0.1.1
	start_agent "$rd" node2 127.0.1.2
	# shellcheck disable=SC2086
	timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-2]' \
		--startup-timeout 20s $mpi -- "$work/rankprog" "$@" \
		>"$work/out" 2>"$work/err"
	rc=$?
	for n in 1 2; do eval "wait_exit 10 \$pid_node$n" || fail "agent node$n did not stop"; done
}
has() { grep -q "$1" "$rd/status.json" || fail "$2: status.json lacks $1: $(cat "$rd/status.json")"; }

run_case exit 75
[ "$rc" = 5 ] || fail "exit 75: launch exited $rc: $(cat "$work/err")"
has '"reason": "preempted"' "exit 75"
has '"resumable": true' "exit 75"
has '"failed_rank": 1' "exit 75"
ok "a rank exits 75: preempted (5), resumable"

run_case exit 3
[ "$rc" = 6 ] || fail "exit 3: launch exited $rc: $(cat "$work/err")"
has '"reason": "oom"' "exit 3"
has '"resumable": false' "exit 3"
has '"failed_node": "node2"' "exit 3"
ok "a rank exits 3: oom (6), not resumable"

run_case exit 74
[ "$rc" = 7 ] || fail "exit 74: launch exited $rc: $(cat "$work/err")"
has '"reason": "io"' "exit 74"
has '"failed_rank": 1' "exit 74"
has '"message": "rank 1 could not write its checkpoints (exit 74)' "exit 74"
ok "a rank exits 74 (checkpoint writes failed): io (7), resumable"

run_case kill KILL wait
[ "$rc" = 4 ] || fail "SIGKILL: launch exited $rc: $(cat "$work/err")"
has '"reason": "node_fail"' "SIGKILL"
has '"resumable": true' "SIGKILL"
has '"message": "rank 1 on node2 was killed by signal 9 (SIGKILL)"' "SIGKILL"
grep -q 'rank 1 on node2 was killed by signal 9 (SIGKILL)' "$work/err" || fail "SIGKILL: not logged: $(cat "$work/err")"
ok "a rank killed by SIGKILL (the others stopped by mpirun): node_fail (4), resumable, rank, node and signal named"

run_case exit 7
[ "$rc" = 1 ] || fail "exit 7: launch exited $rc: $(cat "$work/err")"
has '"reason": "failed"' "exit 7"
has '"resumable": false' "exit 7"
has '"message": "rank 1 on node2 exited with status 7: ValueError: shard 3: checksum mismatch"' "exit 7"
ok "a rank exits 7: failed (1), not resumable, its last error line in the message"
