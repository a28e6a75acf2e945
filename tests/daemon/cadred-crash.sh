#!/bin/sh
# Crash safety on the private Slurm (tests/slurm/), with the fake agent
# and trainer: cadred is killed with SIGKILL in the middle of submitting a
# 20-run experiment and started again; every run is then submitted
# exactly once (counted by job name in squeue, which keeps ended jobs for
# MinJobAge), every run ends done, and the database agrees with Slurm.
# Then the window itself, made to happen with sqlite3: a running job whose
# id never reached the database is found by name after a restart, not
# submitted again; one that has ended and that Slurm has forgotten ends
# by its status.json, not submitted again.
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
extra_cleanup='cadred_stop KILL'
cadred_start

cat > "$work/crash.yaml" <<'SPEC'
version: 1
name: crash
scheduler: { backend: slurm, time_limit: 10m }
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 3 }
measure: { skip_steps: 0 }
repeats: 20
SPEC
id=$(cadre submit "$work/crash.yaml" 2>/dev/null)
# SIGKILL once a few jobs are in (sbatch takes a while each; the rest
# are still to be submitted)
submitted() { [ "$(grep -c ': submitted: attempt' "$work/d/cadred.log")" -ge 3 ]; }
wait_until 60 submitted || fail "no submission seen"
cadred_stop KILL
before=$(grep -c ': submitted: attempt' "$work/d/cadred.log")
if [ "$before" -lt 20 ]; then
	pass "cadred killed after $before of 20 submissions"
else
	echo "note: all 20 were submitted before the kill landed"
fi
cadred_start
check "restart: the same experiment" "$(cadre status --json | grep -c "\"id\": \"$id\"")" 1
all_done() { [ "$(cadre status "$id" | grep -c ' done ')" -eq 20 ]; }
if wait_until 240 all_done; then
	pass "all 20 runs done"
else
	fail "not all done: $(cadre status "$id")"
fi
names=$(squeue --noheader --states=all --Format=Name:64 | sed 's/ *$//' | grep '^cadre-')
check "20 jobs in Slurm" "$(echo "$names" | grep -c .)" 20
check "no run submitted twice" "$(echo "$names" | sort | uniq -d | grep -c .)" 0
for r in $(run_ids "$work/crash.yaml"); do
	n=$(echo "$names" | grep -c "^cadre-$r\$")
	[ "$n" -eq 1 ] || fail "run $r: $n jobs"
	a=$(run_field "$r" attempts)
	[ "$a" = 1 ] || fail "run $r: $a attempts recorded"
done
[ $failed -eq 0 ] && pass "each run: one job, one attempt"

# The window itself, made to happen: a job in Slurm whose id never reached
# the database (cadred killed right after sbatch answered). At the restart
# it is found by name, not submitted again.
if command -v sqlite3 >/dev/null 2>&1; then
	# window_spec NAME SEED: one run, its fake trainer as ctl/mode-SEED says
	window_spec() {
		cat > "$work/$1.yaml" <<SPEC
version: 1
name: $1
scheduler: { backend: slurm, time_limit: 10m }
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 3, seed: $2 }
measure: { skip_steps: 0 }
SPEC
	}
	# lose_job_id RUN: cadred killed, its database as if it had died right
	# after sbatch answered for RUN's attempt
	lose_job_id() {
		cadred_stop KILL
		sqlite3 "$CADRE_STATE_DIR/cadre.db" \
		    "UPDATE attempts SET job_id = NULL WHERE run = '$1'; UPDATE runs SET state = 'new' WHERE id = '$1';"
	}
	window_spec window 99
	echo sleep > "$work/ctl/mode-99"
	idw=$(cadre submit "$work/window.yaml" 2>/dev/null)
	rw=$(run_ids "$work/window.yaml")
	wait_run 60 "$rw" running || fail "window: never running"
	job=$(run_field "$rw" job_id)
	lose_job_id "$rw"
	cadred_start
	found() { grep -q "run $rw: found: attempt 1 is job $job" "$work/d/cadred.log"; }
	if wait_until 30 found; then
		pass "window: job $job found by name after the restart"
	else
		fail "window: $(tail -n 5 "$work/d/cadred.log")"
	fi
	check "window: still one job" "$(squeue --noheader --states=all --name="cadre-$rw" --Format=JobID | grep -c .)" 1
	check "window: same job id recorded" "$(run_field "$rw" job_id)" "$job"
	cadre cancel "$idw" > /dev/null

	# The same window when the job has also ended and the scheduler has
	# forgotten it (cadred down longer than MinJobAge; made to happen by
	# renaming the job, so that asking by name finds nothing): launch's
	# status.json in the run dir ends the attempt; nothing is submitted
	# again.
	window_spec forgot 98
	echo w6 > "$work/ctl/mode-98"
	cadre submit "$work/forgot.yaml" > /dev/null 2>&1
	rf=$(run_ids "$work/forgot.yaml")
	wait_run 60 "$rf" running || fail "forgotten: never running"
	job=$(run_field "$rf" job_id)
	lose_job_id "$rf"
	scontrol update JobId="$job" JobName=renamed ||
	    fail "forgotten: scontrol could not rename job $job"
	ended() { [ -f "$CADRE_STATE_DIR/runs/$rf/status.json" ]; }
	wait_until 60 ended || fail "forgotten: job $job wrote no status.json"
	cadred_start
	if wait_run 30 "$rf" done; then
		pass "forgotten: the run is done by its status.json after the restart"
	else
		fail "forgotten: run $rf $(run_field "$rf" state): $(tail -n 5 "$work/d/cadred.log")"
	fi
	grep -q "run $rf: found: attempt 1 ended while cadred was down" "$work/d/cadred.log" ||
	    fail "forgotten: no event: $(grep "$rf" "$work/d/cadred.log" | tail -n 3)"
	check "forgotten: one attempt" "$(run_field "$rf" attempts)" 1
	check "forgotten: not submitted again" \
	    "$(squeue --noheader --states=all --name="cadre-$rf" --Format=JobID | grep -c .)" 0
else
	echo "SKIP: window case: no sqlite3 command"
fi
exit $failed
