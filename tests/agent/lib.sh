# Shared by the tests/agent/*.sh tests (POSIX sh). Sets $agent, $probe,
# $work (a private temp dir, removed at exit) and $rd (the run dir to use),
# and stops every process started with start_agent at exit.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
agent=$top_builddir/cadre-agent
probe=$top_builddir/tests/agent/ssh-probe
[ -x "$agent" ] || { echo "$test_name: $agent not built" >&2; exit 99; }
chmod 0700 "$work"
rd=$work/run
pids=

cleanup() {
	for p in $pids; do kill -TERM "$p" 2>/dev/null; done
	for p in $pids; do wait_exit 10 "$p" >/dev/null 2>&1; done
	[ -n "${extra_cleanup:-}" ] && eval "$extra_cleanup"
	rm -rf "$work"
}
trap cleanup EXIT

# One "PASS: what" or "FAIL: what" line per case (scripts/test counts
# them); a failure ends the test, as later cases build on earlier ones.
fail() {
	echo "FAIL: $test_name: $*"
	exit 1
}
ok() {
	echo "PASS: $test_name: $*"
}

# wait_for (tests/lib.sh) polls an agent's files twice as often.
wait_tick=0.05

# $mpi: launch's options for Open MPI. mpirun treats each 127.0.1.x as a
# remote host reached through rsh; its own traffic stays on loopback.
mpi="--mpi-arg --mca --mpi-arg oob_tcp_if_include --mpi-arg lo
     --mpi-arg --mca --mpi-arg btl --mpi-arg self,tcp
     --mpi-arg --mca --mpi-arg btl_tcp_if_include --mpi-arg lo"

# need_mpi_hello: exits 77 without Open MPI, or without $hello, the MPI
# test program, which is built only with it.
hello=$top_builddir/tests/agent/mpi-hello
need_mpi_hello() {
	if [ ! -x "$hello" ] || ! command -v mpirun >/dev/null; then
		echo "$test_name: skipped: no Open MPI (mpirun, tests/agent/mpi-hello)"
		exit 77
	fi
}

# start_agent RUNDIR NODE ADDR [OPTIONS...]: starts serve in the background
# (log in $work/NODE.log) and waits for its agents/NODE.json. TMPDIR is
# the test's own, so that the per-node Open MPI directories go with it.
start_agent() {
	_rd=$1; _node=$2; _addr=$3; shift 3
	TMPDIR=$work "$agent" serve --run-dir "$_rd" --node "$_node" --addr "$_addr" \
		--idle-timeout 2m "$@" >"$work/$_node.log" 2>&1 &
	_pid=$!
	pids="$pids $_pid"
	eval "pid_$(echo "$_node" | tr -c 'A-Za-z0-9_\n' _)=$_pid"
	wait_for 10 test -f "$_rd/agents/$_node.json" ||
		fail "agent $_node did not publish (log: $(cat "$work/$_node.log"))"
}

# alive PID: the process runs (a zombie, exited but not yet waited for,
# does not count).
alive() {
	[ -r "/proc/$1/stat" ] || return 1
	_st=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$_st" ] && [ "$_st" != Z ]
}

# wait_exit SECONDS PID: waits until PID has exited, then reaps it and
# returns its status; 124 (and the process is killed) past SECONDS.
wait_exit() {
	_n=0
	while alive "$2"; do
		_n=$((_n + 1))
		if [ $_n -ge $(($1 * 20)) ]; then
			kill -KILL "$2" 2>/dev/null; wait "$2" 2>/dev/null
			return 124
		fi
		sleep 0.05
	done
	wait "$2"
}

# mode PATH: octal permission bits.
mode() {
	stat -c %a "$1"
}

# elapsed_ms START_NS: milliseconds since START_NS (date +%s%N).
now_ns() {
	date +%s%N
}
