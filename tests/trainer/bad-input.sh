#!/bin/sh
# Bad input gives a clear error that names the tensor or the field:
# heads not dividing hidden, and safetensors files with a wrong name, shape
# or dtype, a missing tensor, a truncated or oversized header, a truncated
# data part, a header that is not JSON.
set -eu
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
train="$top_builddir/cadre-train"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
small="--layers 1 --hidden 8 --heads 2 --intermediate 16 --vocab-size 50 --max-position 16 --batch 2 --seq 8"
rc=0
cases=0

expect_error() {	# WHAT EXPECTED-WORDS CADRE-TRAIN-ARGS...
	what=$1 want=$2
	shift 2
	cases=$((cases + 1))
	if "$train" "$@" >"$work/out" 2>"$work/err"; then
		echo "FAIL: $what: cadre-train succeeded"
		rc=1
	elif grep -qF -- "$want" "$work/err"; then
		echo "ok: $what: $(head -n 1 "$work/err")"
	else
		echo "FAIL: $what: expected \"$want\", got: $(cat "$work/err")"
		rc=1
	fi
}

# shellcheck disable=SC2086
expect_error "heads not dividing hidden" "heads (3) do not divide hidden (128)" \
    synthetic --model bert-tiny --heads 3
expect_error "unknown model" "unknown model 'bert-huge'" synthetic --model bert-huge
# shellcheck disable=SC2086
"$train" synthetic --quiet $small --steps 0 --out "$work/good" >/dev/null
good="$work/good/model.safetensors"

# Every bad file is the good one edited by tests/trainer/mkbad.py.
py=
for cand in python3 /usr/bin/python3; do
	command -v "$cand" >/dev/null 2>&1 && { py=$cand; break; }
done
if [ -z "$py" ]; then
	echo "no python3: the safetensors cases are skipped"
	exit 77
fi
"$py" "$top_srcdir/tests/trainer/mkbad.py" "$good" "$work"
while IFS='|' read -r file want; do
	# shellcheck disable=SC2086
	expect_error "$file" "$want" synthetic --quiet $small --steps 0 --init "$work/$file"
done < "$work/cases"
echo "# cases: $cases passed or failed as above"
exit $rc
