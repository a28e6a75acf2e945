#!/bin/sh
# cadred and `cadre run` with the local backend: real agents on loopback
# addresses, real launch and mpirun, the fake trainer
# (tests/daemon/cadred-fake-trainer). `cadre run` runs a 2-run experiment
# to done in the foreground and prints the table; under cadred a trainer
# that exits 75 once is requeued and done at its second attempt, with a
# webhook for each change notify.on names (tests/daemon/webhook-server.py).
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_agent
hook_pid=
cleanup() {
	cadred_stop KILL
	[ -n "$hook_pid" ] && kill $hook_pid 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/run.yaml" <<'SPEC'
version: 1
name: localrun
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 8 }
measure: { skip_steps: 0 }
matrix:
  trainer.seed: [1, 2]
SPEC
cadre run --config "$conf" "$work/run.yaml" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(grep -c ' done .* 8/8 ' "$work/out")" -eq 2 ]; then
	pass "cadre run: 2 runs done, table printed"
else
	fail "cadre run: exit $rc: $(cat "$work/out" "$work/err" | tail -n 8)"
fi
for r in $(run_ids "$work/run.yaml"); do
	grep -q '"reason": "done"' "$CADRE_STATE_DIR/runs/$r/status.json" 2>/dev/null ||
	    fail "run $r: no status.json from launch"
done

hook=
if command -v python3 >/dev/null 2>&1; then
	mkdir "$work/hook"
	python3 "$top_srcdir/tests/daemon/webhook-server.py" "$work/hook" &
	hook_pid=$!
	wait_until 20 test -f "$work/hook/ready" || fail "webhook receiver"
	hook="notify: { webhook: \"http://127.0.0.1:$(cat "$work/hook/port")/\", on: [requeued, done] }"
fi
# local_spec FILE NAME SEED [LINE]: a spec of one run on the local backend;
# the seed picks the fake trainer's modes (ctl/mode-SEED)
local_spec() {
	cat > "$1" <<SPEC
version: 1
name: $2
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 8, seed: $3 }
measure: { skip_steps: 0 }
retries: { backoff: 1s }
${4:-}
SPEC
}
local_spec "$work/requeue.yaml" localrequeue 75 "$hook"
echo "75 k0" > "$work/ctl/mode-75"
cadred_start
id=$(cadre submit "$work/requeue.yaml" 2>/dev/null)
r=$(run_ids "$work/requeue.yaml")
if wait_run 120 "$r" done; then
	check_att=$(run_field "$r" attempts)
	[ "$check_att" = 2 ] && pass "cadred, local: preempted once, requeued, done" ||
	    fail "cadred, local: $check_att attempts"
	# the resume passed over a checkpoint: cadre status RUN says so
	cadre status "$r" > "$work/st" 2>&1
	grep -q "^  resume passed over checkpoints/step-6: fake: meta.json does not parse\$" "$work/st" &&
	    [ "$(run_field "$r" checkpoint_skipped)" = "checkpoints/step-6: fake: meta.json does not parse" ] &&
	    pass "cadre status RUN (and --json) shows the checkpoint the resume passed over" ||
	    fail "checkpoint_skipped not shown: $(cat "$work/st")"
else
	fail "cadred, local: $(run_field "$r" state): $(tail -n 5 "$work/d/cadred.log")"
fi
if [ -n "$hook" ]; then
	got_hooks() { [ "$(grep -c . "$work/hook/bodies" 2>/dev/null)" -ge 2 ]; }
	wait_until 20 got_hooks
	if grep -q "\"run\": *\"$r\".*\"state\": *\"requeued\"" "$work/hook/bodies" &&
	    grep -q "\"state\": *\"done\"" "$work/hook/bodies"; then
		pass "webhooks: requeued, then done"
	else
		fail "webhooks: $(cat "$work/hook/bodies" 2>/dev/null)"
	fi
fi
# three checkpoint writes failed (exit 74): reason io, not in retries.on's
# default, so not resubmitted onto the same disk
local_spec "$work/io.yaml" localio 74
echo "74" > "$work/ctl/mode-74"
cadre submit "$work/io.yaml" > /dev/null 2>&1
r=$(run_ids "$work/io.yaml")
if wait_run 120 "$r" failed; then
	[ "$(run_field "$r" attempts)" = 1 ] && run_field "$r" reason | grep -q "^io (not in retries.on): rank 0 could not write its checkpoints (exit 74)" &&
	    pass "exit 74: reason io, failed without a retry" ||
	    fail "io: $(run_field "$r" attempts) attempts, reason $(run_field "$r" reason)"
else
	fail "io: $(run_field "$r" state): $(tail -n 5 "$work/d/cadred.log")"
fi
[ -n "$id" ] || fail "submit printed no id"
exit $failed
