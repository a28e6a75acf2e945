#!/bin/sh
# cadre report on a fixture experiment (tests/daemon/report-lib.sh: 3
# configurations x 3 repeats; done, resumed, failed, out-of-memory,
# running, cancelled and queued runs): the Markdown, CSV and JSON outputs
# agree, failed and OOM runs appear as such, a configuration with no
# finished run still appears, and an independent recomputation from the
# raw metrics.jsonl files (report_recompute.py) gets the same table.
set -u
. "$top_srcdir/tests/daemon/report-lib.sh"

sd=$work/state
if make_experiment "$sd" e1a2b3c4d5e6 scaling 1; then
	pass "fixture experiment recorded"
else
	fail "fixture experiment: reportfix failed"
	exit 1
fi
run() { "$cadre" report --state-dir "$sd" "$@" > "$work/out" 2> "$work/err"; rc=$?; }

# ---------------------------------------------------------------- md
run scaling
if [ $rc = 0 ] && [ ! -s "$work/err" ]; then
	pass "md report by name, no warnings"
else
	fail "md report: exit $rc: $(cat "$work/err")"
fi
# cells CONFIG_ID: config;done/total;failed;oom;cancelled;other;median
cells() {
	awk -F'|' -v id="$1" '{ for (i = 2; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
	    $2 == id || $2 == id " (base)" { print $2 ";" $9 ";" $10 ";" $11 ";" $12 ";" $13 ";" $14; exit }' "$work/out"
}
# config ids from the JSON of the same report
"$cadre" report --state-dir "$sd" e1a2 --format json > "$work/json" 2>/dev/null
cid() { python3 -c 'import json,sys; print([c["config_id"] for c in json.load(open(sys.argv[1]))["configurations"] if c["nodes"] == int(sys.argv[2])][0])' "$work/json" "$1" 2>/dev/null; }
if command -v python3 >/dev/null 2>&1; then
	c1=$(cid 1); c2=$(cid 2); c4=$(cid 4)
	case $(cells "$c1") in
	"$c1 (base);2/3;1;0;0;0;42.9") pass "1-node row: baseline, 2/3 done, 1 failed, 42.9 samples/s" ;;
	*) fail "1-node row: $(cells "$c1")" ;;
	esac
	case $(cells "$c2") in
	"$c2;2/3;0;1;0;0;77.2") pass "2-node row: 2/3 done, 1 oom, 77.2 samples/s" ;;
	*) fail "2-node row: $(cells "$c2")" ;;
	esac
	case $(cells "$c4") in
	"$c4;0/3;0;0;1;2;-") pass "4-node row without a finished run is shown: 1 cancelled, 2 unfinished" ;;
	*) fail "4-node row: $(cells "$c4")" ;;
	esac
fi
resrun=$(awk '$2 == 0 && $3 == 2 { print $1 }' "$sd/runs.txt")
if grep -q '^Checkpoints passed over on resume' "$work/out" &&
    grep -q "^- $resrun: checkpoints/step-20: meta.json: not JSON\$" "$work/out"; then
	pass "the checkpoint a resume passed over is listed: $(grep "^- $resrun" "$work/out")"
else
	fail "checkpoint_skipped not listed"
fi
oomrun=$(awk '$2 == 1 && $3 == 3 { print $1 }' "$sd/runs.txt")
failrun=$(awk '$2 == 0 && $3 == 3 { print $1 }' "$sd/runs.txt")
if grep -q "^| $oomrun .*| oom " "$work/out" &&
    grep -q "^| $failrun .*| failed " "$work/out"; then
	pass "the OOM and failed runs are listed as such"
else
	fail "OOM/failed run rows missing"
fi
if grep -q '^### batch 8, fp32$' "$work/out" && grep -q '^- mpi: Open MPI 4.1.4$' "$work/out" &&
    grep -q '^- commit: f1x7ure$' "$work/out"; then
	pass "DLPerf table and recorded environment"
else
	fail "DLPerf table or environment missing"
fi
# every table line has the same width as its header: aligned
if awk '/^\|/ { if (w == "") w = length($0); else if (length($0) != w) bad = 1 }
    /^$/ { w = "" } END { exit bad }' "$work/out"; then
	pass "Markdown tables are aligned"
else
	fail "Markdown tables are not aligned"
fi
cp "$work/out" "$top_builddir/tests/daemon/report-table.md" 2>/dev/null

# ---------------------------------------------------------------- csv
run e1a2b3 --format csv
n=$(wc -l < "$work/out")
if [ $rc = 0 ] && [ "$n" = 4 ] && head -n 1 "$work/out" | grep -q '^experiment,config_id,nodes,'; then
	pass "csv: a header and one row per configuration"
else
	fail "csv: exit $rc, $n lines"
fi
# every column once, each row as wide as the header (nodes is varied
# here: it is the fixed column, not a second one)
dups=$(head -n 1 "$work/out" | tr -d '\r' | tr ',' '\n' | sort | uniq -d)
widths=$(awk -F, '{ print NF }' "$work/out" | sort -u | wc -l)
if [ -z "$dups" ] && [ "$widths" = 1 ]; then
	pass "csv: no column twice, every row as wide as the header"
else
	fail "csv: duplicate columns '$dups' or $widths row widths: $(head -n 1 "$work/out")"
fi

# ---------------------------------------------------------------- json + recompute
run e1a2b3c4d5e6 -f json
if [ $rc = 0 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/out" 2>/dev/null; then
	pass "json output parses"
else
	fail "json output: exit $rc"
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 missing: no recomputation"
elif python3 "$top_srcdir/tests/daemon/report_recompute.py" "$sd/runs.txt" \
    "$sd/states.txt" 10 "$work/out" > "$work/recomputed" 2>&1; then
	pass "recomputed from the raw metrics.jsonl files: same table"
	sed 's/^/  /' "$work/recomputed"
else
	fail "recomputation differs:"
	sed 's/^/  /' "$work/recomputed"
fi

# ---------------------------------------------------------------- lookups
run e1
[ $rc = 0 ] && pass "unique id prefix" || fail "prefix e1: exit $rc"
run nosuch
if [ $rc = 1 ] && grep -q "no experiment 'nosuch'" "$work/err"; then
	pass "unknown experiment: exit 1 and a message"
else
	fail "unknown experiment: exit $rc: $(cat "$work/err")"
fi
"$cadre" report --state-dir "$work/none" scaling > /dev/null 2> "$work/err"
rc=$?
if [ $rc = 1 ] && grep -q "cadre.db" "$work/err" && [ ! -e "$work/none/cadre.db" ]; then
	pass "missing database: exit 1, nothing created"
else
	fail "missing database: exit $rc: $(cat "$work/err")"
fi
# A run that staged its data (launch --stage): a "staged" column with its
# time, "-" for the others; in the json too.
sdir=$(awk 'NR == 1 { print $6 }' "$sd/runs.txt")
srun=$(awk 'NR == 1 { print $1 }' "$sd/runs.txt")
sed 's/^{/{"stage_seconds":2.25,/' "$sdir/status.json" > "$work/st" &&
    cp "$work/st" "$sdir/status.json"
run scaling
if [ $rc = 0 ] && grep -q '| staged |' "$work/out" &&
    grep -q "^| $srun .* 2\.2s |\$" "$work/out" &&
    [ "$(grep -c ' - |$' "$work/out")" -ge 1 ]; then
	pass "staging time: a staged column, 2.2s for the staged run"
else
	fail "staging time: $(grep -e staged -e "$srun" "$work/out")"
fi
run scaling --format json
grep -q '"stage_seconds": 2.25' "$work/out" &&
    pass "staging time in the json" || fail "staging time not in the json"

run scaling --format xml
[ $rc = 2 ] && pass "--format xml: exit 2" || fail "--format xml: exit $rc"
run
[ $rc = 2 ] && pass "no experiment: exit 2" || fail "no experiment: exit $rc"
exit $failed
