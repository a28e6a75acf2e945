#!/bin/sh
# cadre report --compare: two fixture experiments (tests/daemon/report-lib.sh)
# with the same configurations, the second one's 2-node runs 1.5 times as
# fast: the 2-node configuration is "faster" by +50%, outside the noise
# band; the 1-node one is unchanged, "within noise"; the 4-node one, with
# no finished run in either, has no data. Matching is by values: the two
# experiments' config ids differ (another seed).
set -u
. "$top_srcdir/tests/daemon/report-lib.sh"

sd=$work/state
if make_experiment "$sd" aaaa00000001 before 1 42 &&
    make_experiment "$sd" bbbb00000002 after 1.5 43; then
	pass "two fixture experiments recorded"
else
	fail "fixture experiments: reportfix failed"
	exit 1
fi

"$cadre" report --state-dir "$sd" before --compare after > "$work/md" 2> "$work/err"
rc=$?
[ $rc = 0 ] && pass "md comparison" || fail "md comparison: exit $rc: $(cat "$work/err")"
# the comparison table: config, nodes, ranks, ..., change, verdict
verdict() {
	sed -n '/^## Compared with/,$p' "$work/md" | awk -F'|' -v n="$1" '
	    { for (i = 2; i <= NF; i++) gsub(/^ +| +$/, "", $i) }
	    $3 == n { print $11 ";" $12 }'
}
case $(verdict 2) in
"+50.0%;faster") pass "2 nodes: +50.0%, faster (outside the noise band)" ;;
*) fail "2 nodes: $(verdict 2)" ;;
esac
# what else differs, outside the matrix: the name and the seed
if grep -qx -- "- name: before -> after" "$work/md" &&
    grep -qx -- "- trainer.seed: 42 -> 43" "$work/md" &&
    [ "$(sed -n '/^Spec differences/,/^|/p' "$work/md" | grep -c '^- ')" = 2 ]; then
	pass "the spec differences: name and trainer.seed"
else
	fail "spec differences: $(sed -n '/^Spec differences/,/^|/p' "$work/md")"
fi
case $(verdict 1) in
"+0.0%;within noise") pass "1 node: +0.0%, within noise" ;;
*) fail "1 node: $(verdict 1)" ;;
esac
case $(verdict 4) in
"-;no data") pass "4 nodes: no data in either" ;;
*) fail "4 nodes: $(verdict 4)" ;;
esac

"$cadre" report --state-dir "$sd" aaaa -c bbbb --format json > "$work/json" 2> "$work/err"
rc=$?
if [ $rc = 0 ] && command -v python3 >/dev/null 2>&1; then
	got=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
nodes = {c["config_id"]: c["nodes"] for c in r["configurations"]}
for m in sorted(r["compare"]["configurations"], key=lambda m: nodes[m["config_a"]]):
    ch = m["change"]
    print(nodes[m["config_a"]], "-" if ch is None else "%.2f" % ch, m["outside_noise"])
' "$work/json" | tr '\n' ';')
	diff=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(";".join("%s:%s>%s" % (d["key"], d["a"], d["b"]) for d in r["compare"]["spec_diff"]))
' "$work/json")
	if [ "$got" = "1 0.00 False;2 0.50 True;4 - False;" ] &&
	    [ "$diff" = "name:before>after;trainer.seed:42>43" ]; then
		pass "json comparison: $got"
	else
		fail "json comparison: $got $diff"
	fi
elif [ $rc != 0 ]; then
	fail "json comparison: exit $rc: $(cat "$work/err")"
fi

"$cadre" report --state-dir "$sd" before --compare nosuch > /dev/null 2> "$work/err"
rc=$?
if [ $rc = 1 ] && grep -q "no experiment 'nosuch'" "$work/err"; then
	pass "--compare with an unknown experiment: exit 1"
else
	fail "--compare nosuch: exit $rc"
fi

# a name given again means the newest experiment; an id prefix of two is
# refused, naming both
make_experiment "$sd" aaaa00000009 before 1 44 || fail "third fixture"
"$cadre" report --state-dir "$sd" before --format json > "$work/json" 2> "$work/err"
rc=$?
if [ $rc = 0 ] && grep -q '"experiment": "aaaa00000009"' "$work/json" &&
    grep -q "2 experiments are named 'before': the newest, aaaa00000009" "$work/err"; then
	pass "a repeated name means the newest experiment, with a note"
else
	fail "repeated name: exit $rc: $(cat "$work/err")"
fi
"$cadre" report --state-dir "$sd" aaaa > /dev/null 2> "$work/err"
rc=$?
if [ $rc = 1 ] && grep -q "'aaaa' is the start of 2 experiment ids (aaaa00000001, aaaa00000009)" "$work/err"; then
	pass "an ambiguous id prefix: exit 1, both named"
else
	fail "ambiguous prefix: exit $rc: $(cat "$work/err")"
fi
exit $failed
