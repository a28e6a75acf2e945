#!/bin/sh
# cadred through the slurm-rest backend (libcurl to the private Slurm's
# slurmrestd on its unix socket) with the real cadre-agent and
# cadre-train: a 2-node bert-tiny experiment on CPU runs to done, with its
# metrics and checkpoints in the run dir. cadred runs as slurmrestd's
# user, whom rest_auth/local trusts (as in tests/daemon/cadred-slurmrest.sh).
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_programs
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: no setpriv"; exit 77; }

sh "$top_srcdir/tests/trainer/realtext.sh" 5000 > "$work/text.txt"
"$top_builddir/cadre-train" vocab --quiet --size 1000 -o "$work/vocab.txt" \
    "$work/text.txt" &&
"$top_builddir/cadre-train" prep --quiet --vocab "$work/vocab.txt" \
    --format text --task pretrain --seq-len 32 --out "$work/shards" \
    "$work/text.txt" || { fail "prep"; exit 1; }
chmod -R a+rX "$work/shards" "$work/vocab.txt"
chown -R "$rest_user" "$work/d" "$work/ctl"
cadred_as="setpriv --reuid=$rest_user --regid=$(id -g "$rest_user") --init-groups"
extra_cleanup='cadred_stop KILL'
cadred_start

cat > "$work/rest.yaml" <<SPEC
version: 1
name: rest
scheduler:
  backend: slurm-rest
  time_limit: 10m
  rest: { url: "unix://$rest_sock" }
resources: { nodes: 2, ranks_per_node: 1, cpus_per_rank: 1 }
agent: { startup_timeout: 60s }
trainer:
  model: bert-tiny
  data: $work/shards
  vocab: $work/vocab.txt
  seq_len: 32
  batch_size: 8
  steps: 20
  checkpoint_every: 0s
  log_every: 5
measure: { skip_steps: 5 }
SPEC
chmod 0644 "$work/rest.yaml"
id=$(cadre submit "$work/rest.yaml" 2>>"$work/d/cadred.log")
[ -n "$id" ] || { fail "submit: $(tail -n 5 "$work/d/cadred.log")"; exit 1; }
run=$(run_ids "$work/rest.yaml")
dir=$CADRE_STATE_DIR/runs/$run
if wait_run 240 "$run" done; then
	pass "slurm-rest: 2-node run $run done"
else
	fail "slurm-rest: run $run $(run_field "$run" state): $(tail -n 20 "$dir/job.out" 2>/dev/null)"
fi
check "slurm-rest: 2 ranks trained" \
    "$(grep -c '"event":"start".*"ranks":2' "$dir/metrics.jsonl" 2>/dev/null)" 1
check "slurm-rest: the summary says complete at step 20" \
    "$(grep -c '"event":"summary","step":20,"complete":true' "$dir/metrics.jsonl" 2>/dev/null)" 1
check "slurm-rest: the final checkpoint is latest" \
    "$(cat "$dir/checkpoints/latest" 2>/dev/null)" step-20
[ -f "$dir/checkpoints/step-20/model.safetensors" ] &&
    pass "slurm-rest: model.safetensors in the run dir" ||
    fail "slurm-rest: no checkpoint: $(ls -R "$dir/checkpoints" 2>&1 | head)"
exit $failed
