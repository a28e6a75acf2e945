#!/bin/sh
# Acceptance: 4 agents on 127.0.1.1-4 and `cadre-agent launch` running a
# 4-rank MPI program through them: ranks land on the right nodes, output
# is tagged, a failing rank fails the launch with its rank and node named,
# SIGUSR1 reaches the ranks, SIGTERM stops them (preempted), an agent that
# starts late is waited for.
. "$top_srcdir/tests/agent/lib.sh"
need_mpi_hello

"$agent" keygen --run-dir "$rd" || fail "keygen"
for i in 1 2 3 4; do start_agent "$rd" node$i 127.0.1.$i; done

# shellcheck disable=SC2086
timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-4]' \
	--startup-timeout 20s $mpi -- "$hello" >"$work/out" 2>"$work/err"; rc=$?
[ "$rc" = 0 ] || fail "launch: status $rc: $(cat "$work/err")"
for r in 0 1 2 3; do
	n=node$((r + 1))
	grep -qx "\[rank $r $n\] hello from rank $r of 4 on node $n" "$rd/log/rank-$r.log" ||
		fail "rank $r: log/rank-$r.log: $(cat "$rd/log/rank-$r.log" 2>&1)"
	grep -qx "\[rank $r $n\] hello from rank $r of 4 on node $n" "$work/out" ||
		fail "rank $r not in launch's output: $(cat "$work/out")"
done
grep -q '"reason": "done"' "$rd/status.json" || fail "status.json: $(cat "$rd/status.json")"
grep -q '"startup_seconds": ' "$rd/status.json" || fail "no startup_seconds"
grep -q "127.0.1.4 slots=1" "$rd/hostfile" || fail "hostfile: $(cat "$rd/hostfile")"
[ "$(mode "$rd/log")" = 700 ] || fail "log/ mode"
[ "$(mode "$rd/log/rank-0.log")" = 600 ] || fail "rank log mode"
ok "4 ranks over 4 agents: rank r on node r+1, tagged in log/rank-r.log and on stdout, status done"

# The agents left when the run ended; start them again for the next runs.
for i in 1 2 3 4; do eval "wait_exit 10 \$pid_node$i" || fail "agent node$i did not stop"; done
rm -f "$rd/status.json"
for i in 1 2 3 4; do start_agent "$rd" node$i 127.0.1.$i; done

# shellcheck disable=SC2086
timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-4]' \
	--startup-timeout 20s $mpi -- "$hello" --fail 2:4 >"$work/out" 2>"$work/err"; rc=$?
[ "$rc" = 1 ] || fail "failing rank: status $rc: $(cat "$work/err")"
grep -q "rank 2 on node3 exited with status 4" "$work/err" || fail "message: $(cat "$work/err")"
grep -q '"reason": "failed"' "$rd/status.json" || fail "status.json reason"
grep -q '"failed_rank": 2' "$rd/status.json" || fail "status.json failed_rank"
grep -q '"failed_node": "node3"' "$rd/status.json" || fail "status.json failed_node"
ok "rank 2 exits 4: launch fails (1) naming rank 2 on node3"

for i in 1 2 3 4; do eval "wait_exit 10 \$pid_node$i" || fail "agent node$i did not stop"; done
rm -f "$rd/status.json"
# node4 starts 1.5 s after launch: waited for, not a failure.
for i in 1 2 3; do start_agent "$rd" node$i 127.0.1.$i; done
# Empty the output files here: the redirections below happen in the
# background child, which may start after wait_for first looks, and an
# earlier launch's lines must not count.
: >"$work/out"; : >"$work/err"
# shellcheck disable=SC2086
"$agent" launch --run-dir "$rd" --nodes 'node[1-4]' --term-grace 20s \
	--startup-timeout 20s $mpi -- "$hello" --signals >"$work/out" 2>"$work/err" &
lp=$!
pids="$pids $lp"
sleep 1.5
start_agent "$rd" node4 127.0.1.4
# count_is N PATTERN FILE: FILE has N lines matching PATTERN.
count_is() { [ "$(grep -c "$2" "$3")" = "$1" ]; }
wait_for 60 count_is 4 'ready$' "$work/out" || fail "ranks not ready: $(cat "$work/out" "$work/err")"
kill -USR1 $lp
wait_for 30 count_is 4 'got SIGUSR1$' "$work/out" || fail "SIGUSR1 did not reach 4 ranks: $(cat "$work/out")"
ok "late agent waited for; SIGUSR1 to launch reaches every rank"
kill -TERM $lp
wait_exit 60 $lp; rc=$?
[ "$rc" = 5 ] || fail "SIGTERM: status $rc, expected 5 (preempted): $(cat "$work/err")"
[ "$(grep -c 'got SIGTERM$' "$work/out")" = 4 ] || fail "SIGTERM did not reach 4 ranks: $(cat "$work/out")"
grep -q '"reason": "preempted"' "$rd/status.json" || fail "status.json reason"
grep -q '"resumable": true' "$rd/status.json" || fail "preempted not resumable"
ok "SIGTERM to launch: every rank gets SIGTERM, status preempted (5), resumable"

# A node lost mid-run: its agent stops (and its orted with it).
for i in 1 2 3 4; do eval "wait_exit 10 \$pid_node$i" || fail "agent node$i did not stop"; done
rm -f "$rd/status.json"
for i in 1 2 3 4; do start_agent "$rd" node$i 127.0.1.$i; done
: >"$work/out"; : >"$work/err"
# shellcheck disable=SC2086
"$agent" launch --run-dir "$rd" --nodes 'node[1-4]' --startup-timeout 20s \
	$mpi -- "$hello" --signals >"$work/out" 2>"$work/err" &
lp=$!
pids="$pids $lp"
wait_for 60 count_is 4 'ready$' "$work/out" || fail "ranks not ready (node loss): $(cat "$work/err")"
kill -TERM "$pid_node3"
wait_exit 60 $lp; rc=$?
[ "$rc" = 4 ] || fail "lost node: status $rc, expected 4 (node_fail): $(cat "$work/err")"
grep -q "node_fail: the agent of node3 no longer answers" "$work/err" || fail "lost node message: $(cat "$work/err")"
grep -q '"reason": "node_fail"' "$rd/status.json" || fail "status.json reason (node_fail)"
ok "an agent stopped mid-run: launch ends with node_fail (4) naming node3"
exit 0
