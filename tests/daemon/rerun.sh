#!/bin/sh
# cadre run, status, logs and rerun without cadred, then rerun and a
# changed spec through cadred: the local backend, real agents, launch and
# mpirun, the fake trainer (tests/daemon/cadred-fake-trainer). One run of
# two fails at its first attempt; `cadre rerun` gives it a second one
# (resumed), `--all` starts the done one over with its old directory moved
# aside, and a bad request changes nothing.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_agent

spec() {
	cat <<SPEC
version: 1
name: rerunexp
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 8 }
measure: { skip_steps: 0 }
retries: { max: $1, backoff: 1s }
env: { SPEC_ENV: "a b" }
setup: ['export FROM_SETUP="set to \$((6 * 7))"']
matrix:
  trainer.seed: [41, 42]
SPEC
}
spec 3 > "$work/exp.yaml"
# seed 42 exits 1 at its first attempt (not in retries.on: failed), then 0
echo "1 0" > "$work/ctl/mode-42"
set -- $(run_ids "$work/exp.yaml")
good=$1 bad=$2

# ------------------------------------------------ without cadred
cadre run --config "$conf" --progress-every 0 "$work/exp.yaml" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^  $bad .* failed " "$work/out" &&
    grep -q "^  $good .* done " "$work/out"; then
	pass "cadre run: one run done, one failed, exit 1"
else
	fail "cadre run: exit $rc: $(tail -n 8 "$work/out" "$work/err")"
fi
# not a terminal: a plain line per change of state
if grep -q "^cadre: $good done step 8/8" "$work/err" &&
    grep -q "^cadre: $bad failed step 5/8 .*exited with status 1" "$work/err"; then
	pass "cadre run: progress lines on stderr when not a terminal"
else
	fail "cadre run: no progress lines: $(head -n 8 "$work/err")"
fi
exp=$(sed -n 's/^cadre run: experiment \([0-9a-f]*\) .*/\1/p' "$work/err" | head -n 1)
# env and setup reach the rank: the setup ran in the node's shell before
# its agent, and what it exported is the trainer's
if grep -qx "SPEC_ENV=a b" "$CADRE_STATE_DIR/runs/$good/fake-env" &&
    grep -qx "FROM_SETUP=set to 42" "$CADRE_STATE_DIR/runs/$good/fake-env"; then
	pass "env and setup reach the ranks"
else
	fail "env/setup: $(grep -E 'SPEC_ENV|FROM_SETUP' "$CADRE_STATE_DIR/runs/$good/fake-env")"
fi

cadre status "$exp" > "$work/st" 2> "$work/st.err"
if [ $? -eq 0 ] && grep -q "not running" "$work/st.err" &&
    grep -q "^  $bad .* failed " "$work/st"; then
	pass "cadre status without cadred: the recorded state"
else
	fail "cadre status without cadred: $(cat "$work/st" "$work/st.err")"
fi
if cadre logs "$bad" 2>/dev/null | grep -q "fake trainer: attempt 1"; then
	pass "cadre logs without cadred"
else
	fail "cadre logs without cadred: $(cadre logs "$bad" 2>&1 | tail -n 3)"
fi

cadre run --config "$conf" "$work/exp.yaml" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "every run has ended already (cadre rerun $exp" "$work/err"; then
	pass "cadre run again: says every run has ended, exit 1"
else
	fail "cadre run again: exit $rc: $(cat "$work/err")"
fi

expect_refused() {	# WHAT PATTERN ARGS...
	_what=$1 _pat=$2
	shift 2
	cadre rerun "$@" > "$work/r.out" 2> "$work/r.err"
	_rc=$?
	if [ $_rc -eq 1 ] && grep -q "$_pat" "$work/r.err"; then
		pass "rerun refuses $_what"
	else
		fail "rerun $_what: exit $_rc: $(cat "$work/r.err")"
	fi
}
expect_refused "a done run without --all" "is done: --all" "$exp" "$good"
expect_refused "an unknown run id" "'0123456789ab' is not a run of experiment" "$exp" 0123456789ab
expect_refused "an unknown experiment" "no experiment 'nosuchexp'" nosuchexp
spec 3 | sed 's/seed: \[41, 42\]/seed: [41, 43]/' > "$work/other.yaml"
expect_refused "a spec of other runs" "describes other runs than experiment" --spec "$work/other.yaml" "$exp"
[ "$(run_field "$bad" attempts)" = 1 ] || fail "a refused rerun changed the attempts"

cadre rerun --config "$conf" --progress-every 0 "$exp" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "1 run get a new attempt: $bad" "$work/err" &&
    grep -q "^  $bad .* done .* 2 " "$work/out" &&
    [ "$(run_field "$bad" attempts)" = 2 ] && [ "$(run_field "$good" attempts)" = 1 ]; then
	pass "rerun without cadred: the failed run's second attempt, in the foreground"
else
	fail "rerun without cadred: exit $rc: $(tail -n 6 "$work/out" "$work/err")"
fi
# the second attempt resumed: its first step line is past step 5
if grep -q '"event": "start", .*"step": 5,' "$CADRE_STATE_DIR/runs/$bad/metrics.jsonl"; then
	pass "rerun of a failed run resumes where it stopped"
else
	fail "rerun: $(grep start "$CADRE_STATE_DIR/runs/$bad/metrics.jsonl")"
fi

cadre rerun --config "$conf" "$exp" > "$work/out" 2> "$work/err"
if [ $? -eq 0 ] && grep -q "no run to rerun" "$work/err"; then
	pass "rerun with nothing failed: says so, exit 0"
else
	fail "rerun, nothing to do: $(cat "$work/err")"
fi

# ------------------------------------------------ with cadred
cadred_start
spec 5 > "$work/exp.yaml"
cadre submit "$work/exp.yaml" > "$work/out" 2> "$work/err"
if grep -q "retries.max: 3 -> 5" "$work/err" && grep -q "not applied: cadre rerun $exp --spec" "$work/err"; then
	pass "submit of a changed spec says what changed and how to apply it"
else
	fail "submit of a changed spec: $(cat "$work/err")"
fi
# both start over in fresh directories: the fake trainer counts from 1
echo "0" > "$work/ctl/mode-42"
cadre rerun --all --spec "$work/exp.yaml" "$exp" > "$work/out" 2> "$work/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "retries.max: 3 -> 5" "$work/err" &&
    grep -q "2 runs get a new attempt" "$work/err" &&
    wait_run 60 "$good" done && wait_run 60 "$bad" done &&
    [ "$(run_field "$good" attempts)" = 2 ] && [ "$(run_field "$bad" attempts)" = 3 ]; then
	pass "rerun --all --spec through cadred: applied, both runs again"
else
	fail "rerun --all through cadred: exit $rc: $(cat "$work/err"; tail -n 5 "$work/d/cadred.log")"
fi
if [ -d "$CADRE_STATE_DIR/runs/$good.rerun-1" ] &&
    [ "$(grep -c '"event": "start"' "$CADRE_STATE_DIR/runs/$good/metrics.jsonl")" = 1 ] &&
    grep -q '"event": "start", .*"step": 0,' "$CADRE_STATE_DIR/runs/$good/metrics.jsonl"; then
	pass "a done run rerun starts over; its old directory is kept beside"
else
	fail "done run rerun: $(ls "$CADRE_STATE_DIR/runs"; cat "$CADRE_STATE_DIR/runs/$good/metrics.jsonl")"
fi
cadre submit "$work/exp.yaml" > "$work/out" 2> "$work/err"
grep -q "differs" "$work/err" && fail "the applied spec still differs: $(cat "$work/err")"

# ids as every command takes them: a unique start of one; --state-dir
# reads that directory here, cadred or not
short=$(echo "$bad" | cut -c1-6)
if cadre status --state-dir "$CADRE_STATE_DIR" "$short" > "$work/out" 2> "$work/err" &&
    grep -q "^  $bad .* done " "$work/out" && ! grep -q "not running" "$work/err" &&
    cadre logs "$short" | grep -q "fake trainer"; then
	pass "status --state-dir and logs take a run id's start"
else
	fail "id prefix / --state-dir: $(cat "$work/out" "$work/err")"
fi
exit $failed
