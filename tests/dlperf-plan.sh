#!/bin/sh
# The DLPerf BERT example (etc/examples/dlperf-bert.yaml) expands to exactly
# the intended runs: (nodes, GPUs per node) in (1,1) (1,8) (2,8) (4,8), batch
# 32/48/64 in fp32 and 64/96/128 in bf16, 7 repeats each: 24 configurations,
# 168 runs, each with its own id, repeats sharing their configuration's id.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
cadre=$top_builddir/cadre
spec=$top_srcdir/etc/examples/dlperf-bert.yaml

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dlperf-plan.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

failed=0
check() {
	if [ "$2" = "$3" ]; then
		echo "PASS: $1"
	else
		echo "FAIL: $1: got '$2', expected '$3'"
		failed=1
	fi
}

if ! "$cadre" plan "$spec" >"$tmp/table" 2>"$tmp/err"; then
	echo "FAIL: cadre plan exited $?"
	cat "$tmp/err"
	exit 1
fi
if ! "$cadre" plan --json "$spec" >"$tmp/json" 2>>"$tmp/err"; then
	echo "FAIL: cadre plan --json exited $?"
	cat "$tmp/err"
	exit 1
fi
check "nothing on stderr" "$(cat "$tmp/err")" ""

# The table: a header, one line per run, the totals.
check "runs in the table" "$(sed '1d;$d' "$tmp/table" | wc -l | tr -d ' ')" 168
check "totals line" "$(tail -n 1 "$tmp/table" | cut -d';' -f1)" \
    "168 runs (24 configurations x 7 repeats)"

# (nodes, GPUs per node, batch per rank, precision) of each run, and how
# many runs each has: every configuration exactly 7 times.
sed '1d;$d' "$tmp/table" | awk '{ print $2, $3, $6, $8 }' | sort | uniq -c |
    awk '{ print $2, $3, $4, $5, $1 }' | sort >"$tmp/got"
for ng in "1 1" "1 8" "2 8" "4 8"; do
	for pb in "fp32 32" "fp32 48" "fp32 64" "bf16 64" "bf16 96" "bf16 128"; do
		echo "$ng ${pb#* } ${pb% *} 7"
	done
done | sort >"$tmp/expected"
if cmp -s "$tmp/expected" "$tmp/got"; then
	echo "PASS: configurations (nodes gpus batch precision runs)"
else
	echo "FAIL: configurations (nodes gpus batch precision runs):"
	diff -u "$tmp/expected" "$tmp/got" | sed 's/^/  /'
	failed=1
fi

# Ids: 168 distinct run ids, 24 distinct configuration ids.
check "distinct run ids" "$(grep '"id":' "$tmp/json" | sort -u | wc -l | tr -d ' ')" 168
check "distinct configuration ids" \
    "$(grep '"config_id":' "$tmp/json" | sort -u | wc -l | tr -d ' ')" 24
check "runs in the JSON total" \
    "$(sed -n 's/^    "runs": \([0-9]*\),*$/\1/p' "$tmp/json")" 168
check "configurations in the JSON total" \
    "$(sed -n 's/^    "configurations": \([0-9]*\),*$/\1/p' "$tmp/json")" 24

exit $failed
