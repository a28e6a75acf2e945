#!/bin/sh
# cadred through the slurm backend on the private Slurm (tests/slurm/),
# with a fake agent and a fake trainer (tests/daemon/cadred-fake-*): a
# submitted experiment runs to done, with its step read from
# metrics.jsonl; submitting it again gives the same id and no second job;
# a trainer that exits 75 once is requeued and done at its second
# attempt; one that exits 1 twice at the same step stops retrying with
# that reason; cancel removes the job from Slurm and marks the run
# cancelled; with slurmctld stopped, status says the scheduler is
# unreachable and nothing is lost: the run finishes once it is back.
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
extra_cleanup='cadred_stop KILL'
cadred_start

spec() {	# spec NAME SEEDS [MORE YAML]
	cat > "$work/$1.yaml" <<SPEC
version: 1
name: $1
scheduler: { backend: slurm, time_limit: 10m }
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 20 }
measure: { skip_steps: 0 }
retries: { max: 3, backoff: 1s, on: [preempted, failed] }
matrix:
  trainer.seed: [$2]
SPEC
}
jobs_named() {	# how many jobs Slurm knows by that name (MinJobAge keeps ended ones)
	squeue --noheader --states=all --name="$1" --Format=JobID | grep -c .
}

# ---- done, twice the same id, no duplicate job
spec basic 1
echo 0 > "$work/ctl/mode-1"
id1=$(cadre submit "$work/basic.yaml" 2>/dev/null)
id2=$(cadre submit "$work/basic.yaml" 2>/dev/null)
check "submit twice: same id" "$id2" "$id1"
run=$(run_ids "$work/basic.yaml")
if wait_run 60 "$run" done; then
	pass "basic: run $run done"
else
	fail "basic: run $run $(run_field "$run" state): $(tail -n 5 "$work/d/cadred.log")"
fi
check "basic: one job in squeue" "$(jobs_named "cadre-$run")" 1
check "basic: step from metrics.jsonl" "$(run_field "$run" step)" 20
check "basic: job output in the run dir" \
    "$(grep -c 'fake trainer: attempt 1' "$CADRE_STATE_DIR/runs/$run/job.out")" 1
cadre status "$id1" > "$work/st"
grep -q "^  $run .* done  *1  20/20  *100.0" "$work/st" &&
    pass "status table: done, 1 attempt, 20/20, 100 samples/s" ||
    fail "status table: $(cat "$work/st")"
cadre watch "$id1" > "$work/watch"
check "watch: exits 0 when done, plain lines" "$?:$(grep -c "^$run done step 20/20" "$work/watch")" "0:1"
check "logs: job.out" "$(cadre logs "$run" | grep -c 'fake trainer')" 1

# ---- requeue: 75 once, then done; 1 twice at the same step: stops
spec requeue "75, 11"
echo "75 0" > "$work/ctl/mode-75"
echo "1" > "$work/ctl/mode-11"
cadre submit "$work/requeue.yaml" > /dev/null 2>&1
set -- $(run_ids "$work/requeue.yaml")
r75=$1 r11=$2
if wait_run 90 "$r75" done; then
	check "preempted once: 2 attempts, then done" "$(run_field "$r75" attempts)" 2
else
	fail "preempted once: $(run_field "$r75" state) $(run_field "$r75" attempts)"
fi
# (the state before depends on what the polls saw of a short job)
grep -q "run $r75: requeued: [a-z]* -> preempted, attempt 1 of 4" "$work/d/cadred.log" &&
    pass "preempted: requeued event" ||
    fail "preempted: no requeued event: $(grep "run $r75: " "$work/d/cadred.log" | tail -n 4)"
check "preempted: resumed at step 5" \
    "$(grep -c '"event": "start", .*"step": 5' "$CADRE_STATE_DIR/runs/$r75/metrics.jsonl")" 1
if wait_run 90 "$r11" failed; then
	check "failed twice at step 5: 2 attempts" "$(run_field "$r11" attempts)" 2
	cadre status "$r11" --json | grep -q '"reason": "failed twice at step 5 without progress: not retried' &&
	    pass "failed twice: the reason says why" ||
	    fail "failed twice: $(cadre status "$r11" --json | grep reason)"
else
	fail "failed twice: $(run_field "$r11" state)"
fi

# ---- cancel
spec cancel 99
echo sleep > "$work/ctl/mode-99"
idc=$(cadre submit "$work/cancel.yaml" 2>/dev/null)
rc_=$(run_ids "$work/cancel.yaml")
wait_run 60 "$rc_" running || fail "cancel: never running"
job=$(run_field "$rc_" job_id)
cadre logs -f "$rc_" > "$work/follow" 2>&1 &
follow=$!
check "cancel: one run" "$(cadre cancel "$idc")" "cancelled 1 run"
check "cancel: run cancelled" "$(run_field "$rc_" state)" cancelled
if wait_until 15 sh -c "! kill -0 $follow"; then
	pass "logs -f: ends once the run has ended"
else
	kill $follow
	fail "logs -f: still following a cancelled run"
fi
is_gone() {
	! squeue --noheader --jobs="$job" --Format=State 2>/dev/null | grep -q 'RUNNING\|PENDING\|COMPLETING'
}
if wait_until 30 is_gone; then
	pass "cancel: job $job gone from squeue"
else
	fail "cancel: job $job: $(squeue --noheader --jobs="$job" --Format=State)"
fi

# ---- slurmctld down for a while: unreachable, nothing lost
spec outage 7
echo w6 > "$work/ctl/mode-7"
cadre submit "$work/outage.yaml" > /dev/null 2>&1
ro=$(run_ids "$work/outage.yaml")
wait_run 60 "$ro" running || fail "outage: never running"
kill "$(cat "$slurm/run/slurmctld.pid")"
wait_for 10 sh -c "! kill -0 $(cat "$slurm/run/slurmctld.pid")"
unreachable() { cadre status | grep -q "scheduler unreachable since [0-9][0-9]:[0-9][0-9]"; }
if wait_until 60 unreachable; then
	pass "outage: status says the scheduler is unreachable"
else
	fail "outage: $(cadre status | head -n 3)"
fi
check "outage: the run keeps its state" "$(run_field "$ro" state)" running
sleep 8	# the job ends while slurmctld is away
slurmctld -f "$SLURM_CONF" 9>&- || fail "slurmctld did not start again"
if wait_run 90 "$ro" done; then
	pass "outage: the run finished once slurmctld was back"
else
	fail "outage: $(run_field "$ro" state) $(tail -n 5 "$work/d/cadred.log")"
fi
unreachable && fail "outage: still unreachable" || pass "outage: reachable again"
check "outage: one job" "$(jobs_named "cadre-$ro")" 1
exit $failed
