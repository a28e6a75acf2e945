#!/bin/sh
# cadre-train itself through the local backend, on 2 virtual nodes (a
# small model, a few seconds): the run ends done with metrics.jsonl and
# checkpoints in the run dir; then, with a second shortened to 0.4 s,
# SIGUSR1 signal_grace before the limit makes the trainer checkpoint and
# stop (status.json preempted, resumable), and the job submitted again
# into the same run dir resumes from that checkpoint.
. "$top_srcdir/tests/daemon/local-lib.sh"
use_trainer

# spec STEPS: the spec of a small model on 2 nodes.
mkspec() {
	cat >"$spec" <<SPEC
version: 1
name: localtrain
scheduler: { backend: local, time_limit: 1m, signal_grace: 50s }
resources: { nodes: 2 }
agent: { startup_timeout: 30s }
trainer:
  model: { layers: 2, hidden: 32, heads: 2, intermediate: 64, vocab_size: 128, max_position: 64 }
  data: shards
  seq_len: 32
  batch_size: 4
  steps: $1
  log_every: 5
  checkpoint_every: 0
measure: { skip_steps: 2 }
SPEC
}

mkspec 20
rd=$(newrun finished) || fatal "mkdir"
"$tool" train-json "$spec" 0 "$rd" "$rd/train.json" || fatal "train-json"
id=$(submit "$rd") || fatal "submit"
line=$(wait_state 120 "$id" "done") || fatal "20 steps: $line; job.out: $(tail -20 "$rd/job.out")"
grep -q '"event":"summary","step":20,"complete":true' "$rd/metrics.jsonl" ||
	fail "metrics.jsonl: $(tail -2 "$rd/metrics.jsonl")"
grep -q '"ranks":2' "$rd/metrics.jsonl" || fail "not 2 ranks: $(head -1 "$rd/metrics.jsonl")"
[ "$(cat "$rd/checkpoints/latest")" = step-20 ] && [ -f "$rd/checkpoints/step-20/model.safetensors" ] ||
	fail "checkpoints: $(ls -R "$rd/checkpoints")"
grep -q '"reason": "done"' "$rd/status.json" || fail "status.json: $(cat "$rd/status.json")"
pass "cadre-train on 2 virtual nodes: done, metrics.jsonl and the final checkpoint in the run dir"

# SIGUSR1 at 4 s (time limit 24 s, grace 20 s), once the ranks train:
# checkpoint, stop, resume.
SCHEDTOOL_LOCAL_SECOND_MS=400
export SCHEDTOOL_LOCAL_SECOND_MS
mkspec 100000
rd=$(newrun preempt) || fatal "mkdir"
"$tool" train-json "$spec" 0 "$rd" "$rd/train.json" || fatal "train-json"
id=$(submit "$rd") || fatal "submit"
line=$(wait_state 60 "$id" '') 
grep -q '"reason": "preempted"' "$rd/status.json" && grep -q '"resumable": true' "$rd/status.json" ||
	fatal "after SIGUSR1: $line; status.json: $(cat "$rd/status.json" 2>&1); job.out: $(tail -20 "$rd/job.out")"
ck=$(cat "$rd/checkpoints/latest")
n=${ck#step-}
[ -n "$n" ] && [ "$n" -gt 0 ] || fatal "checkpoints/latest: '$ck'"
pass "SIGUSR1 before the limit: the trainer checkpointed ($ck) and stopped; status.json preempted, resumable"

id=$(submit "$rd") || fatal "submit again"
line=$(wait_state 60 "$id" '')
grep -q "\"event\":\"start\",\"time\":[0-9.]*,\"step\":$n,\"resumed_from\":\"checkpoints/$ck\"" "$rd/metrics.jsonl" ||
	fail "no resume from $ck: $(grep '"event":"start"' "$rd/metrics.jsonl")"
# every step line after the resume is past the checkpoint
first=$(sed -n '/"resumed_from":"checkpoints\//,$p' "$rd/metrics.jsonl" |
	sed -n 's/.*"event":"step","step":\([0-9]*\),.*/\1/p' | head -1)
[ -n "$first" ] && [ "$first" -gt "$n" ] || fail "first step after the resume: '$first', checkpoint $n"
pass "submitted again into the same run dir: resumed from $ck, no step before it redone"
exit $failed
