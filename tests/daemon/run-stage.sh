#!/bin/sh
# `cadre run` on the local backend with `stage.to`: launch copies
# trainer.data to the node-local directory on both virtual nodes
# (checked by SHA-256), the trainer reads the copy (a $NAME path expanded
# in its environment), the run is done, status.json and the report give
# the staging time, and the copies are removed after the run.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/lib.sh"
for p in cadre cadre-agent cadre-train; do
	[ -x "$top_builddir/$p" ] || skip "$p not built"
done
command -v mpirun >/dev/null 2>&1 || skip "no mpirun"
"$top_builddir/cadre-train" prep --help >/dev/null 2>&1 ||
    skip "cadre-train without prep"
# Open MPI's allocations outlive MPI_Finalize: no leak check in the ranks.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
CADRE_STATE_DIR=$work/state CADRE_RUNTIME_DIR=$work/rt
CADRE_T_LOCAL=$work/node-local
export ASAN_OPTIONS CADRE_STATE_DIR CADRE_RUNTIME_DIR CADRE_T_LOCAL

sh "$top_srcdir/tests/trainer/realtext.sh" 3000 > "$work/text.txt"
"$top_builddir/cadre-train" vocab --quiet --size 1000 -o "$work/vocab.txt" \
    "$work/text.txt" &&
"$top_builddir/cadre-train" prep --quiet --vocab "$work/vocab.txt" \
    --format text --task pretrain --seq-len 32 --out "$work/shards" \
    "$work/text.txt" || { fail "prep"; exit 1; }
cat > "$work/s.yaml" <<SPEC
version: 1
name: stage
scheduler: { backend: local, time_limit: 10m }
resources: { nodes: 2, ranks_per_node: 1, cpus_per_rank: 1 }
stage: { to: \$CADRE_T_LOCAL/shards }
trainer:
  model: bert-tiny
  task: mlm
  data: $work/shards
  seq_len: 32
  batch_size: 4
  steps: 6
  checkpoint_every: 0s
  log_every: 2
measure: { skip_steps: 1 }
SPEC
"$top_builddir/cadre" run "$work/s.yaml" > "$work/out" 2> "$work/err"
rc=$?
run=$(ls "$work/state/runs")
dir=$work/state/runs/$run
if [ $rc = 0 ] && grep -q '"reason": *"done"' "$dir/status.json"; then
	pass "cadre run with stage.to: done"
else
	fail "cadre run: exit $rc: $(tail -n 5 "$work/err") $(tail -n 5 "$dir/job.out")"
fi
grep -q '"data": "\$CADRE_T_LOCAL/shards"' "$dir/train.json" &&
    pass "train.json: data is the staged copy, expanded by the trainer" ||
    fail "train.json data: $(grep '"data"' "$dir/train.json")"
grep -q 'staged in .* files copied' "$dir/job.out" &&
    pass "launch staged the shards to the nodes" ||
    fail "no staging line: $(grep -i stag "$dir/job.out")"
grep -q '"stage_seconds"' "$dir/status.json" &&
    pass "status.json has stage_seconds" || fail "no stage_seconds in status.json"
grep -q '| staged |' "$work/out" &&
    pass "the report has the staging time" || fail "no staged column in the report"
if [ -z "$(ls -A "$CADRE_T_LOCAL" 2>/dev/null)" ]; then
	pass "the node-local copies are removed after the run"
else
	fail "left in the node-local dir: $(ls -R "$CADRE_T_LOCAL" | head)"
fi
exit $failed
