#!/bin/sh
# cadre script and cadre import without a scheduler (the real Slurm runs
# are tests/slurm/wrapper.sh): the script of one run of a spec printed for
# slurm and pbs, nothing written without --write, the run dir --write
# makes; runs imported under their spec or with a spec made from
# metrics.jsonl, their state from status.json or the summary, a second
# import adding nothing, and cadre report showing them; bad input.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
cadre=$top_builddir/cadre
agent=$top_builddir/cadre-agent
[ -x "$cadre" ] || { echo "FAIL: $cadre not built"; exit 99; }
. "$top_srcdir/tests/lib.sh"
[ -x "$agent" ] || skip "no cadre-agent (built without the agent)"
CADRE_STATE_DIR=$work/state
export CADRE_STATE_DIR
tmpl=$top_srcdir/etc/templates

cat > "$work/spec.yaml" <<'SPEC'
version: 1
name: byhand
scheduler: { backend: slurm, time_limit: 30m }
trainer: { model: bert-tiny, data: /data/shards, steps: 20, batch_size: 4, seq_len: 32 }
measure: { skip_steps: 2 }
matrix:
  resources.nodes: [1, 2]
SPEC
ids=$("$cadre" plan "$work/spec.yaml" | awk 'NR > 1 && $1 ~ /^[0-9a-f]+$/ { print $1 }')
id1=$(echo "$ids" | sed -n 1p)
id2=$(echo "$ids" | sed -n 2p)
[ -n "$id1" ] && [ -n "$id2" ] || { echo "FAIL: cadre plan gave no ids"; exit 1; }

"$cadre" script "$work/spec.yaml" > "$work/out" 2> "$work/err"; rc=$?
[ $rc = 2 ] && grep -q "plans 2 runs: pass --run ID, one of: $id1 $id2" "$work/err" &&
    pass "several runs and no --run: exit 2 listing the ids" || fail "no --run: $rc $(cat "$work/err")"
"$cadre" script "$work/spec.yaml" --run "$id2" --templates "$tmpl" \
    --agent /opt/cadre/cadre-agent --trainer /opt/cadre/cadre-train > "$work/s2" 2> "$work/err"; rc=$?
[ $rc = 0 ] && grep -q '^#SBATCH --nodes=2$' "$work/s2" && grep -q '^#SBATCH --time=00:30:00$' "$work/s2" &&
    grep -qx 'agent=/opt/cadre/cadre-agent' "$work/s2" &&
    grep -qx "run_dir=$CADRE_STATE_DIR/runs/$id2" "$work/s2" && [ ! -e "$CADRE_STATE_DIR" ] &&
    pass "slurm script of run $id2: directives, paths, default run dir; nothing written" ||
    fail "slurm script: $rc $(cat "$work/err") $(head -n 12 "$work/s2")"
# no --templates, uninstalled: the build tree finds the source tree's
"$cadre" script "$work/spec.yaml" --run "$id2" > "$work/s3" 2> "$work/err"; rc=$?
[ $rc = 0 ] && grep -q '^#SBATCH --nodes=2$' "$work/s3" &&
    grep -qx "agent=$top_builddir/cadre-agent" "$work/s3" &&
    pass "from the build tree: templates and agent found without options" ||
    fail "script without --templates: $rc $(cat "$work/err")"
prefix=$(echo "$id1" | cut -c1-5)
"$cadre" script "$work/spec.yaml" -r "$prefix" -b pbs --templates "$tmpl" > "$work/p1" 2> "$work/err"; rc=$?
[ $rc = 0 ] && grep -q '^#PBS ' "$work/p1" && ! grep -q '^#SBATCH' "$work/p1" &&
    grep -qx "run_id=$id1" "$work/p1" &&
    pass "--backend pbs, --run by prefix: a PBS script of run $id1" || fail "pbs: $rc $(cat "$work/err")"
"$cadre" script "$work/spec.yaml" --run "$id1" --backend local --templates "$tmpl" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 2 ] && grep -q "expected slurm or pbs" "$work/err" || fail "--backend local: $rc $(cat "$work/err")"
"$cadre" script "$work/spec.yaml" --run ffffffffffff --templates "$tmpl" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 2 ] && grep -q "matches none of the 2 runs" "$work/err" || fail "--run unknown: $rc $(cat "$work/err")"
"$cadre" script "$work/nonexistent.yaml" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 1 ] || fail "missing spec: $rc"
printf 'version: 1\nname: x\ntrainer: { data: /d, stepz: 3 }\n' > "$work/bad.yaml"
"$cadre" script "$work/bad.yaml" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 2 ] && grep -q 'bad.yaml:3:.*stepz' "$work/err" || fail "invalid spec: $rc $(cat "$work/err")"
"$cadre" script "$work/spec.yaml" --run "$id1" --templates "$work/none" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 1 ] && grep -q 'slurm.sh.in.*--templates DIR' "$work/err" || fail "no templates: $rc $(cat "$work/err")"
[ $failed = 0 ] && pass "bad input: --backend local, an unknown run, a missing or invalid spec, no templates"

# --write: the run dir a hand submission needs.
rd=$work/runs/one
"$cadre" script "$work/spec.yaml" --run "$id1" --templates "$tmpl" --agent "$agent" \
    --run-dir "$rd" --write > "$work/s1" 2> "$work/err"; rc=$?
if [ $rc = 0 ] && [ -f "$rd/train.json" ] && [ -f "$rd/keys/id_ed25519" ] &&
    cmp -s "$rd/job.sh" "$work/s1" && [ -f "$rd/spec.yaml" ] && grep -q "\"run\": \"$id1\"" "$rd/run.json" &&
    [ "$(stat -c %a "$rd")" = 700 ] && grep -q '"out": "'"$rd"'"' "$rd/train.json"; then
	pass "--write: train.json (out = the run dir), keys, job.sh (= the printed script), spec.yaml, run.json"
else
	fail "--write: $rc $(cat "$work/err") $(ls -la "$rd" 2>&1)"
fi

# The run "ran": status.json and metrics.jsonl as launch and the trainer
# leave them.
metrics() {
	_ranks=$1 _exit=$2
	echo "{\"event\":\"start\",\"time\":1700000000,\"step\":0,\"resumed_from\":null,\"ranks\":$_ranks,\"threads\":1,\"model\":\"bert-tiny\",\"task\":\"pretrain\",\"batch_size\":4,\"seq_len\":32,\"grad_accum\":1,\"global_batch\":$((4 * _ranks)),\"precision\":\"fp32\",\"device\":\"cpu\",\"commit\":\"abc\"}"
	for s in 1 2 3 4 5 6; do
		echo "{\"event\":\"step\",\"step\":$s,\"epoch\":0,\"loss\":$((20 - s)).5,\"mlm_acc\":null,\"lr\":0.0001,\"grad_norm\":1.0,\"samples_per_s\":$((100 + s)).0,\"tokens_per_s\":3200.0,\"step_ms\":40.0,\"elapsed_s\":$s.0,\"samples\":$((s * 4 * _ranks))}"
	done
	echo "{\"event\":\"summary\",\"step\":6,\"complete\":$([ "$_exit" = done ] && echo true || echo false),\"exit\":\"$_exit\",\"samples\":48,\"steps_this_attempt\":6,\"skip_steps\":2,\"median_samples_per_s\":104.5,\"median_tokens_per_s\":3200.0,\"final_loss\":14.5,\"mlm_acc\":null,\"peak_rss_bytes\":1000000,\"elapsed_s\":6.0,\"env\":{\"commit\":\"abc\",\"threads\":1,\"ranks\":$_ranks,\"device\":\"cpu\",\"blas\":\"x\",\"mpi\":\"y\"}}"
}
metrics 1 done > "$rd/metrics.jsonl"
echo '{"version": 1, "reason": "done", "resumable": false, "exit_status": 0, "nodes": 1}' > "$rd/status.json"
"$cadre" import "$rd" > "$work/i1" 2> "$work/err"; rc=$?
exp=$(sed -n 's/^imported run [0-9a-f]* (done) into experiment \([a-z0-9]*\)$/\1/p' "$work/i1")
[ $rc = 0 ] && grep -q "^imported run $id1 (done)" "$work/i1" && [ -n "$exp" ] ||
    fail "import: $rc $(cat "$work/i1") $(cat "$work/err")"
"$cadre" import "$rd" > "$work/i1b" 2> "$work/err"; rc=$?
[ $rc = 0 ] && grep -q "^imported run $id1 (done) into experiment $exp (already there: state updated)" "$work/i1b" ||
    fail "second import: $rc $(cat "$work/i1b") $(cat "$work/err")"
"$cadre" report byhand > "$work/r1" 2> "$work/err"; rc=$?
if [ $rc = 0 ] && grep -q "^| $id1 .* | done .*| *1 | *104.5 |" "$work/r1" &&
    grep -q "^| $id2 .* missing" "$work/r1"; then
	pass "import under the spec (twice: one run, one attempt): report byhand shows $id1 done at 104.5 samples/s, $id2 missing"
else
	fail "report byhand: $rc $(cat "$work/err") $(grep "$id1\|$id2" "$work/r1")"
fi

# A run of the user's own script: no train.json; status.json says oom.
u=$work/user-run
mkdir "$u"
metrics 2 preempted > "$u/metrics.jsonl"
echo '{"version": 1, "reason": "oom", "resumable": false, "exit_status": 6, "nodes": 2}' > "$u/status.json"
"$cadre" import "$u" --experiment mine > "$work/i2" 2> "$work/err"; rc=$?
uid=$(sed -n 's/^imported run \([0-9a-f]*\) (failed) into .*/\1/p' "$work/i2")
"$cadre" report mine > "$work/r2" 2> "$work/err2"
if [ $rc = 0 ] && [ -n "$uid" ] && grep -q "^| $uid .* | oom  *| oom  *| *1 | *104.5 " "$work/r2" &&
    grep -q '|  *2 |  *0 |  *2 |  *4 |  *8 | fp32 ' "$work/r2"; then
	pass "import of a --from-env run (no train.json): 2 nodes x 1 rank, batch 4 from metrics.jsonl, oom from status.json"
else
	fail "user run: $rc $(cat "$work/i2") $(cat "$work/err") $(cat "$work/err2") $(grep -v '^$' "$work/r2" | head -n 20)"
fi
# Without status.json the summary decides; a bad status.json is a warning.
u2=$work/user-run2
mkdir "$u2"
metrics 1 done > "$u2/metrics.jsonl"
echo '{"reason": ' > "$u2/status.json"
"$cadre" import "$u2" > "$work/i3" 2> "$work/err"; rc=$?
[ $rc = 0 ] && grep -q '(done)' "$work/i3" && grep -q 'status.json:.*warning' "$work/err" &&
    pass "a broken status.json is a warning; the summary says done" || fail "u2: $rc $(cat "$work/i3") $(cat "$work/err")"
# Two dirs of the same configuration are two runs.
u3=$work/user-run3
cp -r "$u2" "$u3"
"$cadre" import "$u3" > "$work/i4" 2> "$work/err"
[ "$(sed -n 's/^imported run \([0-9a-f]*\) .*/\1/p' "$work/i4")" != "$(sed -n 's/^imported run \([0-9a-f]*\) .*/\1/p' "$work/i3")" ] &&
    pass "two run dirs of one configuration are two runs" || fail "u3: $(cat "$work/i3") $(cat "$work/i4")"

mkdir "$work/empty"
"$cadre" import "$work/empty" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 1 ] && grep -q 'not a run directory' "$work/err" || fail "empty dir: $rc $(cat "$work/err")"
"$cadre" import "$work/nonexistent" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 1 ] || fail "missing dir: $rc"
"$cadre" import "$u" --experiment 'bad name' > /dev/null 2> "$work/err"; rc=$?
[ $rc = 2 ] || fail "bad --experiment: $rc"
echo '{"version": 1, "run": "000000000000", "spec_file": "x.yaml"}' > "$u/run.json"
cp "$work/spec.yaml" "$u/spec.yaml"
"$cadre" import "$u" > /dev/null 2> "$work/err"; rc=$?
[ $rc = 1 ] && grep -q 'run 000000000000 is not one of the runs' "$work/err" || fail "run.json with a foreign id: $rc $(cat "$work/err")"
[ $failed = 0 ] && pass "bad input: an empty or missing dir, a bad name, a run.json naming another run"
exit $failed
