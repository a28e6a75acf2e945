#!/bin/sh
# Acceptance (issue 10) against the real Slurm of tests/slurm/start.sh:
# 1. a hand-written 3-line sbatch script, `cadre-agent launch --from-env`
#    around `cadre-train train`, trains bert-tiny on 2 nodes (metrics.jsonl
#    with 2 ranks, the final checkpoint, status.json done), and `cadre
#    import` of its run dir makes `cadre report` show the run;
# 2. the job script `cadre script --write` prints, submitted with plain
#    sbatch, succeeds (status.json done), and imports under its spec.
agent=${top_builddir:?}/cadre-agent
trainer=$top_builddir/cadre-train
cadre=$top_builddir/cadre
for p in "$agent" "$trainer" "$cadre"; do
	[ -x "$p" ] || { echo "wrapper: SKIP: $p not built"; exit 77; }
done
. "$top_srcdir/tests/slurm/lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then
	echo "$test_name: SKIP: no mpirun"
	exit 77
fi
if ! "$trainer" prep --help >/dev/null 2>&1; then
	echo "$test_name: SKIP: cadre-train has no prep (built without utf8proc)"
	exit 77
fi

# Shards of a small pseudo-random text (as tests/trainer/train-lib.sh).
sh "$top_srcdir/tests/trainer/tinytext.sh" > "$work/text.txt"
"$trainer" vocab --quiet --size 120 -o "$work/vocab.txt" "$work/text.txt" &&
"$trainer" prep --vocab "$work/vocab.txt" --format text --task pretrain \
    --seq-len 32 --out "$work/shards" "$work/text.txt" > "$work/prep.log" 2>&1 ||
    { cat "$work/prep.log"; echo "FAIL: prep"; exit 1; }

# What sbatch passes on to the job (its default --export=ALL): every
# "node" is a loopback address here, so Open MPI must use lo; the
# sanitizers' leak report is not about us.
OMPI_MCA_oob_tcp_if_include=lo
OMPI_MCA_btl=self,tcp
OMPI_MCA_btl_tcp_if_include=lo
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
OMP_NUM_THREADS=1
TMPDIR=$work
CADRE_STATE_DIR=$work/state
export OMPI_MCA_oob_tcp_if_include OMPI_MCA_btl OMPI_MCA_btl_tcp_if_include \
    ASAN_OPTIONS OMP_NUM_THREADS TMPDIR CADRE_STATE_DIR

# 1. The user's own script: three lines.
run1=$work/run1
cat > "$work/user.sh" <<SCRIPT
#!/bin/bash
#SBATCH --nodes=2
exec $agent launch --from-env --run-dir $run1 -- $trainer train --model bert-tiny --data $work/shards --out $run1 --steps 6 --batch 4 --seq 32 --log-every 1 --skip-steps 2 --checkpoint-every 0 --quiet
SCRIPT
[ "$(wc -l < "$work/user.sh")" = 3 ] || fail "the script is not 3 lines"
cd "$work" || exit 1
timeout 300 sbatch --wait --output="$work/user.out" "$work/user.sh" > "$work/sbatch1" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '"reason": "done"' "$run1/status.json" 2>/dev/null; then
	pass "3-line sbatch script with launch --from-env: job done ($(cat "$work/sbatch1"))"
else
	fail "3-line sbatch script: sbatch status $rc: $(cat "$work/sbatch1"); job output: $(tail -n 30 "$work/user.out" 2>&1); status.json: $(cat "$run1/status.json" 2>&1)"
fi
grep -q '"event":"start",.*"ranks":2' "$run1/metrics.jsonl" 2>/dev/null &&
    grep -q '"event":"summary","step":6,"complete":true' "$run1/metrics.jsonl" &&
    pass "metrics.jsonl: 2 ranks, 6 steps, complete" ||
    fail "metrics.jsonl: $(head -n 1 "$run1/metrics.jsonl" 2>&1) ... $(tail -n 1 "$run1/metrics.jsonl" 2>&1)"
[ "$(cat "$run1/checkpoints/latest" 2>/dev/null)" = step-6 ] &&
    [ -f "$run1/checkpoints/step-6/model.safetensors" ] &&
    pass "the final checkpoint: checkpoints/step-6" || fail "checkpoints: $(ls -R "$run1/checkpoints" 2>&1)"
grep -q '"node1"' "$run1/log/rank-0.json" 2>/dev/null &&
    grep -q '"node2"' "$run1/log/rank-1.json" 2>/dev/null &&
    [ "$(cut -d' ' -f1 "$run1/hostfile" | tr '\n' ' ')" = "127.0.1.1 127.0.1.2 " ] &&
    pass "rank 0 on node1, rank 1 on node2, agents on their NodeAddr" ||
    fail "ranks/nodes: hostfile $(cat "$run1/hostfile" 2>&1); $(cat "$run1"/log/rank-*.json 2>&1)"
# a job sbatch --wait saw end may still be completing (CG) for a moment
squeue_empty() { squeue -h > "$work/squeue" && [ ! -s "$work/squeue" ]; }
wait_for 30 squeue_empty && pass "nothing left running in Slurm" || fail "jobs left: $(cat "$work/squeue")"

"$cadre" import "$run1" --experiment wrapped > "$work/import1" 2>&1 ||
    fail "cadre import: $(cat "$work/import1")"
"$cadre" import "$run1" --experiment wrapped > "$work/import1b" 2>&1 &&
    grep -q 'already there' "$work/import1b" || fail "second import: $(cat "$work/import1b")"
"$cadre" report wrapped > "$work/report1" 2> "$work/report1.err"; rc=$?
run_id=$(sed -n 's/^imported run \([0-9a-f]*\) (done) into experiment .*/\1/p' "$work/import1")
if [ $rc = 0 ] && [ -n "$run_id" ] && grep -q "$run_id" "$work/report1" &&
    grep -q "^| $run_id .* | done " "$work/report1"; then
	pass "cadre import (twice: no duplicate) and cadre report shows run $run_id, done"
else
	fail "report: status $rc: $(cat "$work/import1") $(cat "$work/report1.err") $(head -n 40 "$work/report1")"
fi

# 2. cadre script: the job script cadred would submit, by hand.
cat > "$work/spec.yaml" <<SPEC
version: 1
name: byhand
scheduler: { backend: slurm, time_limit: 10m, signal_grace: 30s }
resources: { nodes: 2 }
agent: { startup_timeout: 60s }
trainer:
  model: bert-tiny
  data: $work/shards
  seq_len: 32
  batch_size: 4
  steps: 6
  log_every: 1
  checkpoint_every: 0s
measure: { skip_steps: 2 }
SPEC
run2=$work/run2
"$cadre" script "$work/spec.yaml" --run-dir "$run2" --write \
    --templates "$top_srcdir/etc/templates" --agent "$agent" \
    --trainer "$trainer" > "$work/job2.sh" 2> "$work/script.err" ||
    fail "cadre script: $(cat "$work/script.err")"
[ -f "$run2/train.json" ] && [ -f "$run2/keys/id_ed25519" ] && grep -q '^#SBATCH --nodes=2' "$work/job2.sh" &&
    pass "cadre script --write: the script on stdout, train.json and keys in the run dir" ||
    fail "cadre script: $(ls "$run2" 2>&1) $(head -n 5 "$work/job2.sh")"
timeout 300 sbatch --wait --output="$work/job2.out" "$work/job2.sh" > "$work/sbatch2" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '"reason": "done"' "$run2/status.json" 2>/dev/null &&
    grep -q '"event":"summary","step":6,"complete":true' "$run2/metrics.jsonl"; then
	pass "the printed script, submitted with plain sbatch: done, 6 steps"
else
	fail "printed script: sbatch status $rc: $(cat "$work/sbatch2"); $(tail -n 30 "$work/job2.out" 2>&1); $(cat "$run2/status.json" 2>&1)"
fi
"$cadre" import "$run2" > "$work/import2" 2>&1 &&
    "$cadre" report byhand > "$work/report2" 2> "$work/report2.err" &&
    grep -q "$(sed -n 's/^imported run \([0-9a-f]*\) .*/\1/p' "$work/import2")" "$work/report2" &&
    pass "imported under its spec: cadre report byhand shows it" ||
    fail "import/report byhand: $(cat "$work/import2") $(cat "$work/report2.err") $(head -n 30 "$work/report2")"
exit $failed
