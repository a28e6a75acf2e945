#!/bin/sh
# `cadre-train train`: resume exactness and checkpoints. 40 steps straight
# against 20 steps, a SIGTERM (--stop-after), resume, 20 more: the same
# losses and final weights, bit for bit (dropout on, two micro-batches);
# a real `kill -TERM` (exit 75, then resume completes); metrics.jsonl's
# fields; checkpoint retention; SIGUSR1; timed checkpoints; --help against
# the option table; eval of the final checkpoint; classification.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
make_shards "$work/shards"

write_cfg "$work/a.json" "$work/shards" "$work/a" grad_accum 2 steps 40
write_cfg "$work/b.json" "$work/shards" "$work/b" grad_accum 2 steps 40
"$tool" train --config "$work/a.json" --quiet; st=$?
[ $st -eq 0 ] && pass "40 steps straight: exit 0" || fail "40 steps straight: exit $st"
"$tool" train --config "$work/b.json" --quiet --stop-after 20; st=$?
[ $st -eq 75 ] && pass "stop after step 20: exit 75" || fail "stop after step 20: exit $st"
[ "$(cat "$work/b/checkpoints/latest")" = "step-20" ] &&
    pass "latest names step-20" || fail "latest: $(cat "$work/b/checkpoints/latest")"
grep -q '"event":"checkpoint","step":20,.*"reason":"signal"' "$work/b/metrics.jsonl" &&
    pass "signal checkpoint event" || fail "no signal checkpoint event"
grep -q '"event":"summary","step":20,"complete":false,"exit":"preempted"' "$work/b/metrics.jsonl" &&
    pass "preempted summary" || fail "no preempted summary"
"$tool" train --config "$work/b.json" --quiet; st=$?
[ $st -eq 0 ] && pass "resume to step 40: exit 0" || fail "resume: exit $st"
grep -q '"event":"start","time":[0-9.]*,"step":20,"resumed_from":"checkpoints/step-20"' \
    "$work/b/metrics.jsonl" && pass "start event names the checkpoint" ||
    fail "start event of the resumed attempt"
losses "$work/a" > "$work/la"
losses "$work/b" > "$work/lb"
if [ "$(wc -l < "$work/la")" -eq 40 ] && cmp -s "$work/la" "$work/lb"; then
	pass "losses of 40 steps bitwise equal straight and resumed"
else
	fail "losses differ: $(diff "$work/la" "$work/lb" | head -4 | tr '\n' ' ')"
fi
cmp -s "$work/a/checkpoints/step-40/model.safetensors" \
    "$work/b/checkpoints/step-40/model.safetensors" &&
    close_weights "$work/a/checkpoints/step-40/trainer_state.safetensors" \
    "$work/b/checkpoints/step-40/trainer_state.safetensors" 0 optimizer. > /dev/null &&
    pass "final weights and optimizer state bitwise equal" ||
    fail "final weights or optimizer state differ"

# metrics.jsonl: samples = step * global batch on every step line, a
# start and a summary per attempt, the summary's medians present.
awk '/"event":"step"/ {
	match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7);
	match($0, /"samples":[0-9]+/); n = substr($0, RSTART + 10, RLENGTH - 10);
	if (n != s * 8) bad = 1; k++ }
    END { exit bad || k != 40 }' "$work/b/metrics.jsonl" &&
    pass "samples = step * global batch (8) on 40 step lines" ||
    fail "samples do not follow the steps"
for f in epoch loss mlm_acc lr grad_norm samples_per_s tokens_per_s step_ms elapsed_s; do
	grep '"event":"step"' "$work/a/metrics.jsonl" | grep -vq "\"$f\":" &&
	    fail "a step line lacks $f"
done
[ "$(grep -c '"event":"start"' "$work/b/metrics.jsonl")" -eq 2 ] &&
    [ "$(grep -c '"event":"summary"' "$work/b/metrics.jsonl")" -eq 2 ] &&
    pass "two attempts: two start and two summary lines" || fail "start/summary count"
tail -n 1 "$work/a/metrics.jsonl" | grep -q '"event":"summary","step":40,"complete":true,"exit":"done","samples":320,"steps_this_attempt":40,"skip_steps":2,"median_samples_per_s":[0-9]' &&
    pass "summary: complete, samples 320, a median" || fail "summary: $(tail -n 1 "$work/a/metrics.jsonl")"
# elapsed_s keeps growing across the attempts
sed -n 's/.*"event":"step".*"elapsed_s":\([^,]*\),.*/\1/p' "$work/b/metrics.jsonl" |
    awk '$1 < p { bad = 1 } { p = $1 } END { exit bad }' &&
    pass "elapsed_s grows across attempts" || fail "elapsed_s went back"

# retention: keep_checkpoints 2 leaves the newest two
ls "$work/b/checkpoints" | tr '\n' ' ' > "$work/ls"
[ "$(cat "$work/ls")" = "latest step-20 step-40 " ] &&
    pass "checkpoints: latest step-20 step-40" || fail "checkpoints: $(cat "$work/ls")"

# a real SIGTERM from outside, during a run of many steps
write_cfg "$work/k.json" "$work/shards" "$work/k" steps 100000 log_every 50
"$tool" train --config "$work/k.json" --quiet & pid=$!
i=0
while [ ! -s "$work/k/metrics.jsonl" ] || ! grep -q '"event":"step"' "$work/k/metrics.jsonl"; do
	sleep 0.2
	i=$((i + 1))
	[ $i -gt 300 ] && break
done
kill -TERM $pid
wait $pid; st=$?
[ $st -eq 75 ] && pass "kill -TERM: exit 75" || fail "kill -TERM: exit $st"
stopped=$(sed -n 's/^step-//p' "$work/k/checkpoints/latest")
"$tool" train --config "$work/k.json" --quiet --steps $((stopped + 3)); st=$?
[ $st -eq 0 ] && grep -q "\"event\":\"summary\",\"step\":$((stopped + 3)),\"complete\":true" "$work/k/metrics.jsonl" &&
    pass "resumed after kill -TERM at step $stopped and finished" || fail "resume after kill: exit $st"

# SIGUSR1 (what Slurm sends ahead of a time limit) does the same
write_cfg "$work/u.json" "$work/shards" "$work/u" steps 100000 log_every 50
"$tool" train --config "$work/u.json" --quiet & pid=$!
i=0
until grep -q '"event":"step"' "$work/u/metrics.jsonl" 2> /dev/null || [ $i -gt 300 ]; do
	sleep 0.2
	i=$((i + 1))
done
kill -USR1 $pid
wait $pid; st=$?
[ $st -eq 75 ] && grep -q '"reason":"signal"' "$work/u/metrics.jsonl" &&
    pass "kill -USR1: exit 75, a signal checkpoint" || fail "kill -USR1: exit $st"

# SIGUSR1 during startup (the handler comes before MPI, the data and a
# resume): the test hook holds startup for up to 20 s once the handler is
# set and says so on stderr; the signal is sent then. Not fatal, not
# lost: the first step (at least a second long) checkpoints and stops.
write_cfg "$work/e.json" "$work/shards" "$work/e" steps 100
CADRE_TRAIN_TEST_SLOW_START=20000 "$tool" train --config "$work/e.json" \
    --quiet --min-step-ms 1000 2> "$work/e.err" & pid=$!
i=0
until grep -q 'startup held' "$work/e.err" 2> /dev/null || [ $i -gt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -USR1 $pid
wait $pid; st=$?
[ $st -eq 75 ] && [ "$(cat "$work/e/checkpoints/latest" 2>/dev/null)" = step-1 ] &&
    grep -q '"event":"checkpoint","step":1,.*"reason":"signal"' "$work/e/metrics.jsonl" &&
    pass "SIGUSR1 while starting: step 1 checkpointed, exit 75" ||
    fail "SIGUSR1 while starting: exit $st, latest $(cat "$work/e/checkpoints/latest" 2>/dev/null), stderr $(cat "$work/e.err")"

# timed checkpoints: one due after every step (at most one in flight)
write_cfg "$work/t.json" "$work/shards" "$work/t" steps 4 checkpoint_every 1e-9 keep_checkpoints 10
"$tool" train --config "$work/t.json" --quiet; st=$?
n=$(grep -c '"event":"checkpoint",.*"reason":"timed"' "$work/t/metrics.jsonl")
[ $st -eq 0 ] && [ "$n" -eq 3 ] && [ -d "$work/t/checkpoints/step-1" ] &&
    grep -q '"reason":"final"' "$work/t/metrics.jsonl" &&
    grep -q '"event":"step","step":2,.*"checkpoint_ms":' "$work/t/metrics.jsonl" &&
    pass "checkpoint_every: 3 timed checkpoints and the final one, checkpoint_ms on step lines" ||
    fail "timed checkpoints: exit $st, $n timed"

# train --help and the option table agree
sed -n '/^static const struct option train_opts/,/^};/s/^[[:space:]]*{ "\([a-z0-9-]*\)", .*/--\1/p' \
    "$top_srcdir/trainer/train_args.c" | sort -u > "$work/table"
"$tool" train --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u > "$work/helped"
if [ -s "$work/table" ] && cmp -s "$work/table" "$work/helped"; then
	pass "train --help names the $(wc -l < "$work/table") options of the table"
else
	fail "train --help vs the option table: $(diff "$work/table" "$work/helped" | tr '\n' ' ')"
fi

# eval of the final checkpoint: one JSON line
"$tool" eval --init "$work/a/checkpoints/step-40" --data "$work/shards" --batch 4 > "$work/eval" 2> "$work/eval.err"; st=$?
[ $st -eq 0 ] && grep -q '^{"task":"pretrain","mlm_loss":[0-9.e+-]*,"mlm_acc":[0-9.e+-]*,"masked":[1-9]' "$work/eval" &&
    pass "eval: $(cat "$work/eval")" || fail "eval: exit $st $(cat "$work/eval" "$work/eval.err")"
# classification: a 3-class task it can learn, then eval's accuracy
awk 'BEGIN { x = 3; for (i = 0; i < 80; i++) { x = (x * 1103515245 + 12345) % 2147483648;
	l = int(x / 65536) % 3; printf "the cat sat %s on mat\t%s\n",
	(l == 0 ? "red" : l == 1 ? "blue" : "green"), (l == 0 ? "pos" : l == 1 ? "neg" : "mid") } }' \
    > "$work/cls.tsv"
"$tool" vocab --quiet --size 60 -o "$work/cv.txt" "$work/cls.tsv" &&
    "$tool" prep --quiet --vocab "$work/cv.txt" --format tsv --task classify --seq-len 16 \
    --out "$work/cshards" "$work/cls.tsv" || fail "classify shards"
write_cfg "$work/cl.json" "$work/cshards" "$work/cl" task '"classify"' seq_len 16 model '"bert-tiny"' \
    batch_size 8 steps 60 log_every 10 dropout 0
"$tool" train --config "$work/cl.json" --quiet; st=$?
grep -q '"event":"step","step":10,.*"mlm_acc":null' "$work/cl/metrics.jsonl" ||
    fail "classify: step lines with mlm_acc null"
"$tool" eval --init "$work/cl/checkpoints/step-60" --data "$work/cshards" --batch 8 > "$work/eval"; st2=$?
acc=$(sed -n 's/.*"accuracy":\([0-9.]*\).*/\1/p' "$work/eval")
[ $st -eq 0 ] && [ $st2 -eq 0 ] && [ "$(echo "$acc" | awk '{ print ($1 >= 0.9) }')" = 1 ] &&
    pass "classify (bert-tiny): 60 steps, eval accuracy $acc" || fail "classify: exit $st/$st2 $(cat "$work/eval")"
write_cfg "$work/cl2.json" "$work/cshards" "$work/cl2" seq_len 16
"$tool" train --config "$work/cl2.json" --quiet 2> "$work/err"; st=$?
[ $st -eq 2 ] && grep -q "classification shards, but task is pretrain" "$work/err" &&
    pass "pretrain on classification shards: exit 2" || fail "task/kind mismatch: exit $st"
exit $failed
