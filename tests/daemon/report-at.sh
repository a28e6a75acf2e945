#!/bin/sh
# cadre report --at on the fixture experiment (report-lib.sh) with timed
# checkpoint events (due_s, docs/contracts.md) and eval.jsonl files written
# here: one run lacks the point, one checkpoint is not evaluated, one
# eval.jsonl line is malformed (a warning naming file:line). The JSON
# medians are recomputed independently from the files; csv agrees; bad
# --at values are usage errors (exit 2); the plots parse as XML.
set -u
. "$top_srcdir/tests/daemon/report-lib.sh"
command -v python3 >/dev/null 2>&1 || skip "no python3"

sd=$work/state
make_experiment "$sd" e1a2b3c4d5e6 scaling 1 > /dev/null 2>&1 ||
	{ fail "fixture experiment"; exit 1; }
i=0
for r in $(ls "$sd/runs"); do
	d=$sd/runs/$r
	i=$((i + 1))
	s1=$((10 + i)); s2=$((20 + i))
	printf '{"event":"checkpoint","step":%d,"elapsed_s":%s,"samples":%d,"path":"checkpoints/step-%d","reason":"timed","stall_ms":1,"write_ms":1,"bytes":1,"due_s":5}\n' \
	    $s1 5.1 $((s1 * 8)) $s1 >> "$d/metrics.jsonl"
	[ $i = 1 ] || printf '{"event":"checkpoint","step":%d,"elapsed_s":%s,"samples":%d,"path":"checkpoints/step-%d","reason":"timed","stall_ms":1,"write_ms":1,"bytes":1,"due_s":10}\n' \
	    $s2 10.2 $((s2 * 8)) $s2 >> "$d/metrics.jsonl"
	printf '{"step":%d,"due_s":5,"loss":%s,"accuracy":0.%d}\n' $s1 "6.$i" $((10 + i)) > "$d/eval.jsonl"
	[ $i = 2 ] || printf '{"step":%d,"due_s":10,"loss":%s,"accuracy":0.%d}\n' $s2 "4.$i" $((30 + i)) >> "$d/eval.jsonl"
	[ $i = 3 ] && echo '{"step": oops' >> "$d/eval.jsonl" && bad=$d/eval.jsonl
done

"$cadre" report --state-dir "$sd" scaling --at 5s,10s -f json > "$work/json" 2> "$work/err"
rc=$?
"$cadre" report --state-dir "$sd" scaling --at 5s,10s -f csv > "$work/csv" 2> /dev/null
[ $rc = 0 ] && pass "--at json exits 0" || fail "--at json: exit $rc: $(cat "$work/err")"
grep -q "eval.jsonl:3" "$work/err" && pass "malformed eval.jsonl line is a warning naming file:line" ||
	fail "no file:line warning: $(cat "$work/err")"

# Independent recomputation: the run -> configuration map from the
# report's "runs", every figure from the raw files written above.
if python3 - "$work/json" "$work/csv" > "$work/py" 2>&1 <<'PY'
import csv, json, statistics, sys
rep = json.load(open(sys.argv[1]))
rows = {(float(r["at_s"]), r["config_id"]): r for r in csv.DictReader(open(sys.argv[2]))}
bad = []
for at in rep["at"]:
    T = at["seconds"]
    for c in at["configs"]:
        steps, accs = [], []
        for run in rep["runs"]:
            if run["config_id"] != c["config"]:
                continue
            pts = [json.loads(l) for l in open(run["run_dir"] + "/metrics.jsonl")]
            pts = [e for e in pts if e.get("event") == "checkpoint" and abs(e.get("due_s", -9) - T) < 0.5]
            if not pts:
                continue
            steps.append(pts[-1]["step"])
            for l in open(run["run_dir"] + "/eval.jsonl"):
                try:
                    e = json.loads(l)
                except ValueError:
                    continue
                if e["step"] == pts[-1]["step"]:
                    accs.append(e["accuracy"])
        if c["runs_at"] != len(steps):
            bad.append("%s at %s: runs_at %s, recomputed %d" % (c["config"], T, c["runs_at"], len(steps)))
        if steps and abs(c["steps"]["median"] - statistics.median(steps)) > 1e-9:
            bad.append("%s at %s: steps %s vs %s" % (c["config"], T, c["steps"]["median"], statistics.median(steps)))
        if accs and abs(c["accuracy"]["median"] - statistics.median(accs)) > 1e-9:
            bad.append("%s at %s: accuracy %s vs %s" % (c["config"], T, c["accuracy"]["median"], statistics.median(accs)))
        if accs and (c["accuracy"]["min"], c["accuracy"]["max"]) != (min(accs), max(accs)):
            bad.append("%s at %s: accuracy range" % (c["config"], T))
        r = rows[(float(T), c["config"])]
        if steps and abs(float(r["steps_median"]) - statistics.median(steps)) > 1e-6:
            bad.append("%s at %s: csv steps %s" % (c["config"], T, r["steps_median"]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
then
	pass "--at table recomputed from the raw files matches json and csv"
else
	fail "--at recomputation: $(cat "$work/py")"
fi
# the second run's 10s checkpoint is not evaluated: fewer accuracies than runs
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if any(c["accuracy"]["n"] < c["runs_at"] for a in r["at"] for c in a["configs"] if c["runs_at"]) else 1)' "$work/json" &&
	pass "a checkpoint not evaluated has no accuracy" || fail "unevaluated checkpoint counted"
# the first run lacks the 10s point
grep -q '"runs_at": 2' "$work/json" && pass "a run without the point is not counted" ||
	fail "runs_at 2 not found"

for a in 0 garbage -5m; do
	"$cadre" report --state-dir "$sd" scaling --at "$a" > /dev/null 2> "$work/err"
	rc=$?
	[ $rc = 2 ] && grep -q -- "--at" "$work/err" && pass "--at $a: usage error, exit 2" ||
		fail "--at $a: exit $rc: $(cat "$work/err")"
done

"$cadre" report --state-dir "$sd" scaling --at 5s,10s --plot "$work/plots" > /dev/null 2>&1
for f in accuracy_vs_time.svg accuracy_vs_samples.svg; do
	python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$work/plots/$f" 2>/dev/null &&
		pass "$f exists, parses as XML" || fail "$f missing or not XML"
done
exit $failed
