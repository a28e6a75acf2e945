#!/bin/sh
# launch's readiness wait: a node whose agent never starts fails the launch
# within startup_timeout + 2 s, naming it, with status startup_timeout;
# an agent that starts late is waited for (no fixed sleep); bad usage.
. "$top_srcdir/tests/agent/lib.sh"

"$agent" keygen --run-dir "$rd" || fail "keygen"
start_agent "$rd" n1 127.0.1.1
start_agent "$rd" n2 127.0.1.2

t0=$(now_ns)
timeout 30 "$agent" launch --run-dir "$rd" --nodes 'n[1-3]' \
	--startup-timeout 3s -- true >"$work/out" 2>"$work/err"; rc=$?
ms=$((($(now_ns) - t0) / 1000000))
[ "$rc" = 3 ] || fail "status $rc, expected 3 (startup_timeout): $(cat "$work/err")"
[ $ms -le 5000 ] || fail "took $ms ms, more than startup_timeout + 2 s"
grep -q "startup_timeout: 1 of 3 agents not ready after 3s: n3" "$work/err" ||
	fail "message: $(cat "$work/err")"
grep -q "n3: not ready: .*agents/n3.json" "$work/err" || fail "no reason for n3: $(cat "$work/err")"
grep -q '"reason": "startup_timeout"' "$rd/status.json" || fail "status.json reason"
grep -q '"node": "n3"' "$rd/status.json" || fail "status.json does not name n3"
grep -q '"node": "n1"' "$rd/status.json" && fail "status.json names a ready node"
grep -q '"resumable": true' "$rd/status.json" || fail "startup_timeout not resumable"
[ "$(mode "$rd/status.json")" = 600 ] || fail "status.json mode"
ok "agent never starts: exit 3 after $ms ms (timeout 3 s), n3 named, status.json written"

# The agents saw status.json (newer than them) and stopped.
wait_exit 10 "$pid_n1" || fail "n1 kept running after the run ended"
wait_exit 10 "$pid_n2" || fail "n2 kept running after the run ended"
ok "agents stop once launch has written status.json"

# A published file whose agent is gone (stale): not ready either.
rm -f "$rd/status.json"
start_agent "$rd" n4 127.0.1.4
cp "$rd/agents/n4.json" "$work/n4.json"
kill -TERM "$pid_n4"; wait_exit 10 "$pid_n4"
cp "$work/n4.json" "$rd/agents/n4.json"
timeout 30 "$agent" launch --run-dir "$rd" --nodes n4 --startup-timeout 1s \
	-- true 2>"$work/err"; rc=$?
[ "$rc" = 3 ] || fail "stale agent file: status $rc"
grep -q "n4: not ready: n4 (127.0.1.4 port" "$work/err" || fail "stale message: $(cat "$work/err")"
ok "stale agents/n4.json (agent gone): not ready, named with its address"

# A PBS nodefile (FQDNs, a host once per slot) names the same nodes.
rm -f "$rd/status.json"
start_agent "$rd" n5 127.0.1.5
start_agent "$rd" n6 127.0.1.6
printf 'n5.cluster\nn5.cluster\nn6.cluster\n' > "$work/nodefile"
timeout 30 "$agent" launch --wait-only --run-dir "$rd" --nodefile "$work/nodefile" \
	--startup-timeout 10s >"$work/out" 2>"$work/err" || fail "nodefile: $(cat "$work/err")"
grep -q "^ready 2 " "$work/out" || fail "nodefile wait: $(cat "$work/out")"
[ -f "$rd/status.json" ] && fail "--wait-only wrote status.json"
ok "--nodefile (PBS form) and --wait-only"

# SIGTERM during the wait (a preemption at start-up), and SIGUSR1 there
# (the scheduler's one time-limit warning, before any rank could hear
# it): preempted and resumable, at once; neither ignored nor fatal.
for sig in TERM USR1; do
	rm -f "$rd/status.json"
	"$agent" launch --run-dir "$rd" --nodes nx --startup-timeout 60s -- true 2>"$work/err" &
	lp=$!
	pids="$pids $lp"
	sleep 0.5
	kill -$sig $lp
	wait_exit 5 $lp; rc=$?
	[ "$rc" = 5 ] || fail "SIG$sig in the wait: status $rc, expected 5: $(cat "$work/err")"
	grep -q '"reason": "preempted"' "$rd/status.json" &&
	    grep -q '"resumable": true' "$rd/status.json" ||
	    fail "status.json after SIG$sig in the wait: $(cat "$rd/status.json")"
	ok "SIG$sig while waiting for agents: preempted (5) within 5 s, resumable"
done

for bad in "--nodes n[1-" "--nodes bad/name" "--nodes n1 --slots 0" "--startup-timeout 5 --nodes n1"; do
	# shellcheck disable=SC2086
	timeout 10 "$agent" launch --run-dir "$rd" $bad -- true 2>"$work/err"; rc=$?
	[ "$rc" = 2 ] || fail "launch $bad: status $rc, expected 2"
done
ok "bad --nodes, --slots, --startup-timeout: usage errors (2)"
exit 0
