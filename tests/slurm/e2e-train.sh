#!/bin/sh
# cadred end to end on the private Slurm (tests/slurm/) with the real
# cadre-agent and cadre-train: a 2-node bert-tiny experiment on CPU runs to
# done with its metrics and checkpoints in the run dir; SIGKILL of one
# trainer rank mid-run makes the run requeued, and the next attempt
# resumes from the last checkpoint written before the kill, redoing no
# step before it; a job that reaches its time limit gets SIGUSR1 (sbatch
# --signal=B:USR1@grace), checkpoints, is requeued and finishes.
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_programs
# Each step takes at least 150 ms (--min-step-ms), whatever the machine's
# speed: the kill lands before the run is done, and the time limit's
# SIGUSR1 comes before the first attempt can finish (below).
use_min_step_ms 150
# Open MPI's allocations outlive MPI_Finalize by design: a debug build's
# LeakSanitizer would fail every rank at exit (cadre-train built with MPI
# and ASan turns it off by default, too).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
extra_cleanup='cadred_stop KILL'

# Real text, a vocab, shards of 32 tokens.
sh "$top_srcdir/tests/trainer/realtext.sh" 20000 > "$work/text.txt"
"$top_builddir/cadre-train" vocab --quiet --size 2000 -o "$work/vocab.txt" \
    "$work/text.txt" || { fail "vocab"; exit 1; }
"$top_builddir/cadre-train" prep --quiet --vocab "$work/vocab.txt" \
    --format text --task pretrain --seq-len 32 --out "$work/shards" \
    "$work/text.txt" || { fail "prep"; exit 1; }
cadred_start

spec() {	# spec NAME NODES STEPS CHECKPOINT_EVERY TIME_LIMIT GRACE [STARTUP]
	cat > "$work/$1.yaml" <<SPEC
version: 1
name: $1
scheduler: { backend: slurm, time_limit: $5, signal_grace: $6 }
resources: { nodes: $2, ranks_per_node: 1, cpus_per_rank: 1 }
agent: { startup_timeout: ${7:-60s} }
trainer:
  model: bert-tiny
  task: pretrain
  data: $work/shards
  vocab: $work/vocab.txt
  seq_len: 32
  batch_size: 8
  steps: $3
  checkpoint_every: $4
  log_every: 5
measure: { skip_steps: 5 }
retries: { max: 12, backoff: 0s }
SPEC
}
mx() { echo "$CADRE_STATE_DIR/runs/$1/metrics.jsonl"; }
# The "step" member of the Nth line (1-based) of RUN's metrics with EVENT.
event_step() {
	grep "\"event\":\"$2\"" "$(mx "$1")" | sed -n "${3}p" |
	    sed -n 's/.*"step":\([0-9]*\).*/\1/p'
}

# ---- a 2-node experiment to done
spec two 2 30 0s 10m 60s
submit() { cadre submit "$work/$1.yaml" 2>>"$work/d/cadred.log"; }
submit two > /dev/null
run=$(run_ids "$work/two.yaml")
dir=$CADRE_STATE_DIR/runs/$run
if wait_run 240 "$run" done; then
	pass "2 nodes: run $run done"
else
	fail "2 nodes: run $run $(run_field "$run" state): $(tail -n 20 "$dir/job.out" 2>/dev/null)"
fi
check "2 nodes: 2 ranks trained" \
    "$(grep -c '"event":"start".*"ranks":2' "$(mx "$run")")" 1
check "2 nodes: the summary says complete at step 30" \
    "$(grep -c '"event":"summary","step":30,"complete":true' "$(mx "$run")")" 1
check "2 nodes: the final checkpoint is latest" \
    "$(cat "$dir/checkpoints/latest" 2>/dev/null)" step-30
[ -f "$dir/checkpoints/step-30/model.safetensors" ] &&
    [ -f "$dir/checkpoints/step-30/config.json" ] &&
    pass "2 nodes: model.safetensors and config.json in the run dir" ||
    fail "2 nodes: no checkpoint files: $(ls -R "$dir/checkpoints" 2>&1 | head)"
check "2 nodes: status.json says done" \
    "$(sed -n 's/.*"reason": *"\([a-z_]*\)".*/\1/p' "$dir/status.json" | head -n 1)" done

# ---- SIGKILL of one rank: requeued, resumed from the last checkpoint
spec kill 2 200 2s 10m 60s
submit kill > /dev/null
run=$(run_ids "$work/kill.yaml")
dir=$CADRE_STATE_DIR/runs/$run
has_ckpt() { grep -q '"event":"checkpoint"' "$(mx "$run")"; }
if wait_until 240 has_ckpt; then
	# One rank of this run: its trainer process, found by the run dir in
	# its command line (--config RUN_DIR/train.json).
	pid=$(pgrep -f "^$top_builddir/cadre-train train --config $dir/train.json" | tail -n 1)
	if [ -n "$pid" ]; then
		kill -KILL "$pid"
		pass "kill: SIGKILL to rank process $pid after a checkpoint"
	else
		fail "kill: no trainer process found"
	fi
else
	fail "kill: no checkpoint within 240 s: $(tail -n 5 "$dir/job.out" 2>/dev/null)"
fi
if wait_run 300 "$run" done; then
	pass "kill: the run is done after $(run_field "$run" attempts) attempts"
else
	fail "kill: run $run $(run_field "$run" state) $(run_field "$run" reason)"
fi
check "kill: the killed attempt ended node_fail (resumable)" \
    "$(sed -n 's/.*"reason": *"\([a-z_]*\)".*/\1/p' "$dir/status.1.json" 2>/dev/null | head -n 1)" node_fail
# The second start resumes at the last checkpoint written before it. The
# metrics line of a checkpoint comes at the step after its write ended,
# so the kill may fall between the two: the resumed step is then a later
# one than the last line names, but not past what the attempt trained
# (its last step line, and fewer than log_every steps more).
resumed=$(event_step "$run" start 2)
last_ckpt=$(awk '/"event":"start"/ { n++ } n == 1 && /"event":"checkpoint"/' "$(mx "$run")" |
    tail -n 1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
last_step=$(awk '/"event":"start"/ { n++ } n == 1 && /"event":"step"/' "$(mx "$run")" |
    tail -n 1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
if [ -n "$resumed" ] && [ -n "$last_ckpt" ] && [ -n "$last_step" ] &&
    [ "$resumed" -gt 0 ] && [ "$resumed" -ge "$last_ckpt" ] &&
    [ "$resumed" -lt $((last_step + 5)) ]; then
	pass "kill: resumed at step $resumed, the last checkpoint before the kill (last line: $last_ckpt)"
else
	fail "kill: resumed at '$resumed', last checkpoint line before the kill '$last_ckpt', last step line '$last_step'"
fi
# No step at or before the resumed one is trained again: the first step
# line after the second start is past it.
first_after=$(awk '/"event":"start"/ { n++ } n == 2 && /"event":"step"/' "$(mx "$run")" |
    head -n 1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
if [ -n "$first_after" ] && [ "$first_after" -gt "$resumed" ]; then
	pass "kill: the resumed attempt's first step line is $first_after > $resumed"
else
	fail "kill: first step line after resuming: '$first_after' (resumed at '$resumed')"
fi
check "kill: the run ends at step 200" \
    "$(grep -c '"event":"summary","step":200,"complete":true' "$(mx "$run")")" 1

# ---- the time limit: SIGUSR1, checkpoint, requeued, finished
# 2 minutes with a 60 s grace: SIGUSR1 comes 60 s in, or up to 30 s later
# (slurmctld looks at time limits every 30 s), before 700 steps are done
# (at least 105 s at 150 ms a step), so the first attempt stops on the
# signal, with 30 s or more left to checkpoint and exit before the limit.
# Each attempt trains about a minute less its startup: the second or
# third finishes.
spec limit 1 700 0s 2m 60s 30s
submit limit > /dev/null
run=$(run_ids "$work/limit.yaml")
dir=$CADRE_STATE_DIR/runs/$run
if wait_run 540 "$run" done; then
	pass "time limit: done after $(run_field "$run" attempts) attempts"
else
	fail "time limit: run $run $(run_field "$run" state) $(run_field "$run" reason)"
fi
check "time limit: the first attempt ended preempted" \
    "$(sed -n 's/.*"reason": *"\([a-z_]*\)".*/\1/p' "$dir/status.1.json" 2>/dev/null | head -n 1)" preempted
sig_step=$(grep '"event":"checkpoint".*"reason":"signal"' "$(mx "$run")" | head -n 1 |
    sed -n 's/.*"step":\([0-9]*\).*/\1/p')
check "time limit: the second attempt resumed at the signal's checkpoint" \
    "$(event_step "$run" start 2)" "${sig_step:-none}"
check "time limit: the run ends at step 700" \
    "$(grep -c '"event":"summary","step":700,"complete":true' "$(mx "$run")")" 1
exit $failed
