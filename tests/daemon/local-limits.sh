#!/bin/sh
# The local backend's time limit and failures, with a second shortened to
# 0.2 s (1 minute limit: 12 s; 30 s grace: SIGUSR1 at 6 s, late enough
# that the fake ranks have set their traps even on a loaded machine): the
# ranks get SIGUSR1 first, then SIGTERM at the limit, and the job is
# timeout, with launch's status.json (preempted) written within the 30
# "seconds" (6 s) before SIGKILL, which mpirun's teardown needs under
# load; ranks that ignore SIGTERM are killed then, still timeout, no
# process left; a failing rank makes the job failed.
. "$top_srcdir/tests/daemon/local-lib.sh"
SCHEDTOOL_LOCAL_SECOND_MS=200
export SCHEDTOOL_LOCAL_SECOND_MS

rd=$(newrun limit) || fatal "mkdir"
echo sleep >"$rd/fake-mode"
id=$(submit "$rd") || fatal "submit"
line=$(wait_state 40 "$id" timeout) || fatal "over the limit: $line; job.out: $(cat "$rd/job.out")"
u=$(grep -n 'rank 0 got USR1' "$rd/job.out" | head -1 | cut -d: -f1)
t=$(grep -n 'rank 0 got TERM' "$rd/job.out" | head -1 | cut -d: -f1)
if [ -n "$u" ] && [ -n "$t" ] && [ "$u" -lt "$t" ]; then
	pass "over its time limit: USR1 reaches the ranks first, then TERM; state timeout"
else
	fail "USR1 then TERM: job.out: $(cat "$rd/job.out")"
fi
grep -q '"reason": "preempted"' "$rd/status.json" ||
    fail "status.json: '$(cat "$rd/status.json")'; job.out: $(cat "$rd/job.out")"
wait_for 15 test -z "$(procs_of "$rd")" || fail "processes left: $(procs_of "$rd")"

rd=$(newrun stubborn) || fatal "mkdir"
echo ignore-term >"$rd/fake-mode"
id=$(submit "$rd") || fatal "submit"
line=$(wait_state 40 "$id" timeout) || fatal "TERM ignored: $line; job.out: $(cat "$rd/job.out")"
case $line in
"$id timeout -1 9 "*) pass "ranks ignoring TERM: the job is killed (SIGKILL) after the grace; timeout" ;;
*) fail "TERM ignored: poll line '$line'" ;;
esac
wait_for 20 test -z "$(procs_of "$rd")" || fail "processes left: $(procs_of "$rd")"

rd=$(newrun fails) || fatal "mkdir"
echo "exit 7" >"$rd/fake-mode"
id=$(submit "$rd") || fatal "submit"
line=$(wait_state 40 "$id" failed) || fatal "failing rank: $line; job.out: $(cat "$rd/job.out")"
case $line in
"$id failed 1 0 exited 1") pass "a rank exits 7: launch fails, the job is failed with launch's exit 1" ;;
*) fail "failing rank: poll line '$line'" ;;
esac

# A job the backend cannot run.
rd=$(newrun noscript) || fatal "mkdir"
sed 's/nodes: 2/nodes: 300/' "$spec" >"$work/big.yaml"
if "$tool" submit "$templates" "$work/big.yaml" 0 "$rd" 2>"$work/err"; then
	fail "300 virtual nodes accepted"
elif grep -q 'at most 254 virtual nodes' "$work/err"; then
	pass "300 nodes refused: the local backend has 254 at most"
else
	fail "300 nodes: $(cat "$work/err")"
fi
exit $failed
