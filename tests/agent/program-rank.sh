#!/bin/sh
# cadre-agent rank --program, run directly with the variables mpirun or
# srun would set: the identity and program.json's environment reach the
# command, {name}s and vars expand, the workdir is honoured; SIGUSR1 as
# the program's signal (per_node: to the ranks under the launcher only),
# SIGUSR2 as SIGTERM to the whole group; metrics from output; the output
# caps; --setup's failure report; a missing command.
. "$top_srcdir/tests/agent/lib.sh"

mkdir -m 0700 "$rd" "$rd/log" || fail "mkdir $rd/log"
mkdir "$work/wd" || fail "mkdir wd"
CADRE_NODE=tn
CADRE_METRICS=$work/metrics.jsonl
export CADRE_NODE CADRE_METRICS
unset OMPI_COMM_WORLD_RANK SLURM_PROCID PMIX_RANK CADRE_LOG_MAX 2>/dev/null

# prog NAME JSON-MEMBERS: $work/NAME.json with version 1 and the members.
prog() {
	printf '{"version": 1, %s}\n' "$2" >"$work/$1.json"
}
# rank [VAR=VALUE...] -- ARGS...: cadre-agent rank, rc in $rc, stdout and
# stderr in $work/out and $work/err.
rank() {
	_env=
	while [ "$1" != -- ]; do _env="$_env $1"; shift; done
	shift
	# shellcheck disable=SC2086
	env $_env timeout 60 "$agent" rank --run-dir "$rd" "$@" \
		>"$work/out" 2>"$work/err"
	rc=$?
}
ompi() {
	echo "OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=$2" \
	    "OMPI_COMM_WORLD_LOCAL_RANK=$3 OMPI_COMM_WORLD_LOCAL_SIZE=$4"
}
ids='id=$RANK/$WORLD_SIZE/$LOCAL_RANK/$LOCAL_WORLD_SIZE/$GROUP_RANK/$NODE_RANK/$CADRE_NODE_RANK'

# --- identity, env, vars, workdir
prog pr "\"command\": [\"sh\", \"-c\", \"echo $ids env=\$FOO pwd=\$(pwd) arg=\$0\", \"{greeting}-{node_rank}\"],
	\"env\": {\"FOO\": \"bar baz\"}, \"vars\": {\"greeting\": \"hello\"}, \"workdir\": \"$work/wd\""
# shellcheck disable=SC2046
rank $(ompi 3 4 1 2) -- --program "$work/pr.json"
[ "$rc" = 0 ] || fail "per_rank: status $rc: $(cat "$work/err")"
grep -qx "\[rank 3 tn\] id=3/4/1/2/1/1/1 env=bar baz pwd=$work/wd arg=hello-1" "$rd/log/rank-3.log" ||
	fail "per_rank under mpirun: $(cat "$rd/log/rank-3.log")"
grep -q '"exit": 0' "$rd/log/rank-3.json" || fail "rank-3.json: $(cat "$rd/log/rank-3.json")"
grep -q '"peak_rss_bytes": [1-9]' "$rd/log/rank-3.json" || fail "no peak_rss_bytes: $(cat "$rd/log/rank-3.json")"
ok "per_rank (Open MPI): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, node ranks, env, vars, {node_rank}, workdir"

rank SLURM_PROCID=5 SLURM_NTASKS=8 SLURM_LOCALID=1 'SLURM_TASKS_PER_NODE=4(x2)' \
	SLURM_NODEID=1 -- --program "$work/pr.json"
grep -qx "\[rank 5 tn\] id=5/8/1/4/1/1/1 env=bar baz pwd=$work/wd arg=hello-1" "$rd/log/rank-5.log" ||
	fail "per_rank under srun: $(cat "$rd/log/rank-5.log" "$work/err")"
rank -- --program "$work/pr.json" --rank 2
[ "$rc" = 1 ] || fail "per_rank without mpirun or srun: status $rc"
grep -q "neither OMPI_COMM_WORLD_RANK nor SLURM_PROCID" "$rd/log/rank-2.json" ||
	fail "per_rank without mpirun: $(cat "$rd/log/rank-2.json")"
ok "per_rank (srun): SLURM_PROCID, SLURM_TASKS_PER_NODE's first count, SLURM_NODEID; none: exit 1 with why"

prog sh "\"command\": \"echo {greeting} \$FOO {run_dir}; echo \\\"\$RANK-\$LOCAL_RANK-\$CADRE_NODE_RANK\\\"\", \"launch\": \"per_node\",
	\"env\": {\"FOO\": \"x\"}, \"vars\": {\"greeting\": \"it's\"}"
rank OMPI_COMM_WORLD_RANK=1 RANK=99 LOCAL_RANK=7 CADRE_RUN_DIR="$rd" -- --program "$work/sh.json"
[ "$rc" = 0 ] || fail "per_node: status $rc: $(cat "$work/err")"
grep -qx "\[rank 1 tn\] it's x $rd" "$rd/log/rank-1.log" &&
	grep -qx "\[rank 1 tn\] --1" "$rd/log/rank-1.log" ||
	fail "per_node: $(cat "$rd/log/rank-1.log")"
prog once "\"command\": [\"sh\", \"-c\", \"echo once \$CADRE_NODE_RANK; pwd\"], \"launch\": \"once\""
rank -- --program "$work/once.json" --rank 0
grep -qx "\[rank 0 tn\] once 0" "$rd/log/rank-0.log" && grep -qx "\[rank 0 tn\] $rd" "$rd/log/rank-0.log" ||
	fail "once: $(cat "$rd/log/rank-0.log")"
ok "per_node: CADRE_NODE_RANK, no RANK/LOCAL_RANK; a shell command with quoted values; once: --rank 0, the run dir as workdir"

prog nowd "\"command\": [\"true\"], \"workdir\": \"$work/nonexistent\""
# shellcheck disable=SC2046
rank $(ompi 4 8 0 2) -- --program "$work/nowd.json"
[ "$rc" = 1 ] || fail "a missing workdir: status $rc"
grep -q "\"message\": \"workdir $work/nonexistent: No such file" "$rd/log/rank-4.json" ||
	fail "missing workdir: rank-4.json: $(cat "$rd/log/rank-4.json")"
grep -q "workdir $work/nonexistent: No such file" "$rd/log/rank-4.log" ||
	fail "missing workdir not in the log"
prog nocmd "\"command\": [\"/nonexistent/prog\", \"x\"]"
# shellcheck disable=SC2046
rank $(ompi 6 8 0 2) -- --program "$work/nocmd.json"
[ "$rc" = 127 ] || fail "a missing command: status $rc"
grep -q '"exit": 127' "$rd/log/rank-6.json" &&
	grep -q '"message": "cannot run /nonexistent/prog: No such file or directory"' "$rd/log/rank-6.json" ||
	fail "missing command: rank-6.json: $(cat "$rd/log/rank-6.json")"
printf '{"version": 1, "command": 3}' >"$work/bad.json"
# shellcheck disable=SC2046
rank $(ompi 6 8 0 2) -- --program "$work/bad.json"
[ "$rc" = 1 ] && grep -q "bad.json: command" "$rd/log/rank-6.json" ||
	fail "a bad program.json: $rc: $(cat "$rd/log/rank-6.json")"
ok "a missing workdir exits 1, a missing command 127, a bad program.json 1, each with why in rank-R.json"

# --- signals
# signalled NAME SIGNAL WORDS [VAR=VALUE...]: runs program NAME in the
# background until each of WORDS is in its output, sends SIGNAL to rank;
# its status in $rc.
signalled() {
	_name=$1 _sig=$2 _words=$3
	shift 3
	env "$@" "$agent" rank --run-dir "$rd" --program "$work/$_name.json" \
		>"$work/$_name.out" 2>&1 &
	_rp=$!
	for _w in $_words; do
		wait_for 10 grep -q "$_w" "$work/$_name.out" ||
			fail "$_name did not start: $(cat "$work/$_name.out")"
	done
	kill -"$_sig" $_rp
	wait_exit 20 $_rp
	rc=$?
}
cat >"$work/worker.sh" <<EOF
# A rank of a per-node launcher, with a child of its own that inherits
# its environment (as a DataLoader worker does).
sh -c 'trap "echo dl >>$work/usr1-dl; exit 0" USR1; while :; do sleep 0.05; done' &
dl=\$!
trap 'echo \$LOCAL_RANK >$work/usr1-\$LOCAL_RANK; kill \$dl; exit 0' USR1
sleep 0.3
echo ready-\$LOCAL_RANK
while :; do sleep 0.05; done
EOF
cat >"$work/launcher.sh" <<EOF
trap 'echo launcher >>$work/usr1-launcher' USR1
LOCAL_RANK=0 sh $work/worker.sh &
a=\$!
LOCAL_RANK=1 sh $work/worker.sh &
b=\$!
wait \$a
wait \$b
EOF
prog pn "\"command\": [\"sh\", \"$work/launcher.sh\"], \"launch\": \"per_node\""
signalled pn USR1 'ready-0 ready-1' OMPI_COMM_WORLD_RANK=2
[ "$rc" = 0 ] || fail "per_node after SIGUSR1: status $rc: $(cat "$work/pn.out")"
[ "$(cat "$work/usr1-0" "$work/usr1-1" 2>&1)" = "$(printf '0\n1')" ] ||
	fail "the workers did not get SIGUSR1: $(cat "$work/usr1-0" "$work/usr1-1" 2>&1)"
[ ! -e "$work/usr1-launcher" ] || fail "the launcher got SIGUSR1"
[ ! -e "$work/usr1-dl" ] || fail "a worker's child got SIGUSR1"
ok "per_node: SIGUSR1 reaches the launcher's ranks (LOCAL_RANK, parent without), not the launcher or a rank's child"

cat >"$work/hup.sh" <<EOF
trap 'echo hup >$work/got-hup; exit 0' HUP
trap 'echo usr1 >$work/got-usr1; exit 0' USR1
echo ready
while :; do sleep 0.05; done
EOF
prog hup "\"command\": [\"sh\", \"$work/hup.sh\"], \"signal\": \"SIGHUP\""
# shellcheck disable=SC2046
signalled hup USR1 ready $(ompi 1 2 1 2)
[ "$rc" = 0 ] && [ -e "$work/got-hup" ] && [ ! -e "$work/got-usr1" ] ||
	fail "per_rank: SIGUSR1 as the program's SIGHUP: status $rc"

cat >"$work/group.sh" <<EOF
sh -c 'trap "echo child >$work/term-child; exit 0" TERM; while :; do sleep 0.05; done' &
trap 'echo parent >$work/term-parent; wait; exit 75' TERM
sleep 0.3
echo ready
while :; do sleep 0.05; done
EOF
prog group "\"command\": [\"sh\", \"$work/group.sh\"]"
# shellcheck disable=SC2046
signalled group USR2 ready $(ompi 1 2 1 2)
[ "$rc" = 75 ] && [ -e "$work/term-parent" ] && [ -e "$work/term-child" ] ||
	fail "SIGUSR2: status $rc; $(cat "$work"/term-* 2>&1)"
ok "per_rank: SIGUSR1 arrives as program.signal (SIGHUP); SIGUSR2 is SIGTERM to the whole process group"

# --- metrics from output
prog mx "\"command\": [\"sh\", \"-c\", \"echo 'step 1 loss=2.5 sps=10'; echo 'step 2 loss=2.25' >&2; echo 'other'; i=0; while [ \$i -lt 12 ]; do echo 'step 3 loss=bad'; i=\$((i+1)); done\"],
	\"metrics_regex\": \"step (?<step>\\\\d+) loss=(?<loss>\\\\S+)(?: sps=(?<samples_per_s>\\\\S+))?\""
# shellcheck disable=SC2046
rank $(ompi 0 2 0 2) -- --program "$work/mx.json"
[ "$rc" = 0 ] || fail "metrics: status $rc: $(cat "$work/err")"
[ "$(wc -l <"$CADRE_METRICS")" = 2 ] || fail "metrics.jsonl: $(cat "$CADRE_METRICS")"
grep -q '^{"event":"step","step":1,"loss":2.5,"samples_per_s":10,"elapsed_s":[0-9.e-]*}$' "$CADRE_METRICS" &&
	grep -q '^{"event":"step","step":2,"loss":2.25,"elapsed_s":[0-9.e-]*}$' "$CADRE_METRICS" ||
	fail "metrics.jsonl: $(cat "$CADRE_METRICS")"
[ "$(grep -c "metrics_regex: a line skipped: loss: 'bad' is not a finite number" "$rd/log/rank-0.log")" = 10 ] &&
	[ "$(grep -c "further warnings suppressed" "$rd/log/rank-0.log")" = 1 ] ||
	fail "metrics warnings: $(grep metrics_regex "$rd/log/rank-0.log")"
# shellcheck disable=SC2046
rank $(ompi 1 2 1 2) -- --program "$work/mx.json"
[ "$(wc -l <"$CADRE_METRICS")" = 2 ] || fail "rank 1 wrote metrics"
ok "metrics_regex: stdout and stderr lines to metrics.jsonl on rank 0 only; bad values skipped, 10 warnings then one"

# --- output caps
prog big "\"command\": [\"sh\", \"-c\", \"yes 'a line of output that is about sixty bytes long .....' | head -c 300000000; echo done >&2\"]"
start=$(now_ns)
# shellcheck disable=SC2046
rank CADRE_LOG_MAX=8M $(ompi 7 8 1 2) -- --program "$work/big.json"
ms=$((($(now_ns) - start) / 1000000))
[ "$rc" = 0 ] || fail "300 MB of output: status $rc"
size=$(stat -c %s "$rd/log/rank-7.log")
[ "$size" -le $((8 * 1048576 + 200)) ] && [ "$size" -ge $((8 * 1048576 - 200)) ] ||
	fail "log of $size bytes for a cap of 8M"
out=$(stat -c %s "$work/out")
[ "$out" -le $((1048576 + 200)) ] && [ "$out" -ge $((1048576 - 200)) ] ||
	fail "stdout of $out bytes for a relay cap of 1M"
[ "$(grep -c "^\[rank 7 tn\] output past 8388608 bytes dropped (CADRE_LOG_MAX)$" "$rd/log/rank-7.log")" = 1 ] ||
	fail "no (or more than one) cap line in the log: $(tail -n 2 "$rd/log/rank-7.log")"
[ "$(grep -c "^\[rank 7 tn\] output past 1048576 bytes dropped (CADRE_LOG_MAX)$" "$work/out")" = 1 ] ||
	fail "no cap line on stdout: $(tail -n 2 "$work/out")"
[ "$ms" -lt 30000 ] || fail "300 MB took $ms ms"
ok "300 MB of output, CADRE_LOG_MAX=8M: log $size bytes, stdout $out bytes, one line each says so; $ms ms"

# --- setup
prog setup "\"command\": [\"true\"], \"vars\": {\"greeting\": \"hello\"}, \"env\": {\"FOO\": \"foo\"},
	\"workdir\": \"$work/wd\", \"setup\": [\"echo one {greeting} \$FOO \$(pwd)\", \"echo two >&2; exit 3\", \"echo never\"]"
rank -- --program "$work/setup.json" --setup
[ "$rc" = 3 ] || fail "--setup: status $rc: $(cat "$work/err")"
grep -qx "\[setup tn\] one hello foo $work/wd" "$rd/log/setup-tn.log" &&
	grep -qx "\[setup tn stderr\] two" "$rd/log/setup-tn.log" ||
	fail "setup-tn.log: $(cat "$rd/log/setup-tn.log")"
grep -q never "$rd/log/setup-tn.log" && fail "setup went on after a failure"
grep -q '"command": "echo two >&2; exit 3"' "$rd/log/setup-tn.json" &&
	grep -q '"exit": 3' "$rd/log/setup-tn.json" && grep -q '"node": "tn"' "$rd/log/setup-tn.json" ||
	fail "setup-tn.json: $(cat "$rd/log/setup-tn.json")"
prog setup "\"command\": [\"true\"], \"setup\": [\"true\", \"echo fine\"]"
rank -- --program "$work/setup.json" --setup
[ "$rc" = 0 ] && grep -q '"command": null' "$rd/log/setup-tn.json" && grep -q '"exit": 0' "$rd/log/setup-tn.json" ||
	fail "a good setup: $rc: $(cat "$rd/log/setup-tn.json")"
prog setup "\"command\": [\"true\"]"
rank -- --program "$work/setup.json" --setup
[ "$rc" = 0 ] || fail "no setup commands: status $rc"
ok "--setup: commands in order with env and workdir, stops at the first failure, setup-NODE.json names it"

# --- usage
rank -- --program "$work/pr.json" -- true
[ "$rc" = 2 ] || fail "--program with a COMMAND: status $rc"
rank -- --setup -- true
[ "$rc" = 2 ] || fail "--setup without --program: status $rc"
rank -- --rank x --program "$work/pr.json"
[ "$rc" = 2 ] || fail "--rank x: status $rc"
ok "usage errors exit 2"
exit 0
