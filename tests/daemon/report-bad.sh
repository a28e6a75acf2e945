#!/bin/sh
# cadre report on damaged run files (a fixture experiment from
# tests/daemon/report-lib.sh, then damaged): a metrics.jsonl line over
# the 1 MiB bound, text that is not JSON, a JSON array, step lines with a
# field missing, of the wrong type or negative, and a truncated last line
# (a run still writing); a status.json that is not JSON; a done run with
# no metrics.jsonl at all; FIFOs in place of both files. The report still comes out (exit 0), each bad
# line is one warning naming FILE:LINE, the truncated last line is none,
# and the damaged run's throughput is what its good lines give.
set -u
. "$top_srcdir/tests/daemon/report-lib.sh"
command -v python3 >/dev/null 2>&1 || skip "python3 missing"

sd=$work/state
make_experiment "$sd" cccc00000003 damaged 1 || { fail "fixture"; exit 1; }
json() { "$cadre" report --state-dir "$sd" damaged --format json > "$1" 2> "$work/err"; }
thr() { python3 -c 'import json,sys; print([r["samples_per_s"] for r in json.load(open(sys.argv[1]))["runs"] if r["id"] == sys.argv[2]][0])' "$1" "$2"; }
json "$work/before.json" || { fail "report before the damage"; exit 1; }

run=$(awk '$2 == 0 && $3 == 1 { print $1 }' "$sd/runs.txt")
rd=$sd/runs/$run
m=$rd/metrics.jsonl
n=$(wc -l < "$m")
{
	printf '{"event":"step","step":45,"pad":"'
	head -c 1100000 /dev/zero | tr '\0' x
	printf '"}\n'
	echo 'not json at all'
	echo '[1, 2, 3]'
	echo '{"event":"step","step":50,"loss":1.0,"elapsed_s":3}'
	echo '{"event":"step","step":55,"loss":1.0,"elapsed_s":3,"samples_per_s":"fast"}'
	echo '{"event":"step","step":-3,"loss":1.0,"elapsed_s":3,"samples_per_s":1}'
	echo '{"no_event":1}'
	printf '{"event":"step","step":60,"samples_per_s":99'
} >> "$m"
st=$(awk '$2 == 1 && $3 == 1 { print $6 }' "$sd/runs.txt")/status.json
echo '{"reason": "done", oops' > "$st"
rm "$(awk '$2 == 1 && $3 == 2 { print $6 }' "$sd/runs.txt")/metrics.jsonl"
# FIFOs where the files should be: read, they would hang the report
fifo_rd=$(awk '$2 == 2 && $3 == 1 { print $6 }' "$sd/runs.txt")
rm -f "$fifo_rd/metrics.jsonl"
mkfifo "$fifo_rd/metrics.jsonl" "$fifo_rd/status.json"

to=; command -v timeout >/dev/null 2>&1 && to="timeout 60"
$to "$cadre" report --state-dir "$sd" damaged --format json > "$work/after.json" 2> "$work/err"
rc=$?
[ $rc = 0 ] && pass "report of damaged files: exit 0" || fail "exit $rc: $(cat "$work/err")"
for i in 1 2 3 4 5 6 7; do
	if grep -q "^$m:$((n + i)):1: warning: skipped: " "$work/err"; then
		pass "line $((n + i)) skipped with a warning: $(grep "^$m:$((n + i)):" "$work/err" | sed "s|^$m|metrics.jsonl|" | cut -c1-110)"
	else
		fail "no warning for line $((n + i))"
	fi
done
grep -q "^$m:$((n + 1)):1: warning: skipped: line longer than 1048576 bytes" "$work/err" &&
    pass "the over-long line is named as such" || fail "over-long line message"
if grep -q "^$m:$((n + 8)):" "$work/err"; then
	fail "the truncated last line got a warning"
else
	pass "the truncated last line (still being written) is no warning"
fi
if grep -q "^$st:1:.*warning: not JSON" "$work/err"; then
	pass "a broken status.json is a warning naming it"
else
	fail "broken status.json: $(cat "$work/err")"
fi
a=$(thr "$work/before.json" "$run"); b=$(thr "$work/after.json" "$run")
[ "$a" = "$b" ] && pass "throughput of the damaged run unchanged: $b" ||
    fail "throughput changed: $a -> $b"
if grep -q "^$fifo_rd/metrics.jsonl: warning: not a regular file" "$work/err" &&
    grep -q "^$fifo_rd/status.json: warning: not a regular file" "$work/err"; then
	pass "FIFOs in place of metrics.jsonl and status.json: warnings, no hang"
else
	fail "FIFOs: $(cat "$work/err")"
fi
nw=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["warnings"]))' "$work/after.json")
[ "$nw" = 10 ] && pass "json lists the 10 warnings" || fail "json lists $nw warnings"

# the md and csv reports of the same damage
"$cadre" report --state-dir "$sd" damaged > "$work/md" 2>/dev/null &&
    grep -q "^10 warnings about the runs' files: see standard error.$" "$work/md" &&
    pass "md report says how many warnings" || fail "md report of damaged files"
exit $failed
