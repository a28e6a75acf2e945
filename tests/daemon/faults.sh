#!/bin/sh
# Faults a run survives, on the local backend with the real agents, launch
# and mpirun and the fake trainer (tests/daemon/cadred-fake-trainer):
# `cadre-agent launch` killed with SIGKILL mid-run leaves no status.json;
# the attempt ends node_fail (resumable), says why, and the run is retried
# and done, under `cadre run`.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_agent
cleanup() {
	[ -n "${run_pid:-}" ] && kill "$run_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/spec.yaml" <<'SPEC'
version: 1
name: faults
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 8, seed: 7 }
measure: { skip_steps: 0 }
retries: { backoff: 1s }
SPEC
# the first attempt trains for a while (it is killed in it), then done
echo "w6 0" > "$work/ctl/mode-7"
r=$(run_ids "$work/spec.yaml")
rd=$CADRE_STATE_DIR/runs/$r
cadre run --config "$conf" -q "$work/spec.yaml" > "$work/out" 2> "$work/err" &
run_pid=$!
started() { grep -q '"event": "start"' "$rd/metrics.jsonl"; }
if wait_until 60 started && pkill -KILL -f "cadre-agent launch --run-dir $rd"; then
	wait "$run_pid"
	rc=$?
	run_pid=
	if [ $rc -eq 0 ] && [ "$(run_field "$r" attempts)" = 2 ] &&
	    grep -q "^  $r .* done .* 2 " "$work/out"; then
		pass "launch killed: the run is retried and done"
	else
		fail "launch killed: exit $rc: $(tail -n 5 "$work/out" "$work/err")"
	fi
	why=$(python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT reason FROM attempts WHERE run = ? AND n = 1",
    (sys.argv[2],)).fetchone()[0])' "$CADRE_STATE_DIR/cadre.db" "$r")
	if echo "$why" | grep -q "^node_fail at step [0-9]*: the job was killed (exit 137) before launch wrote status.json"; then
		pass "the attempt ended node_fail, with why"
	else
		fail "attempt 1's reason: $why"
	fi
else
	fail "no launch to kill: $(cat "$work/err")"
fi
exit $failed
