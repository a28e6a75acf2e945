#!/bin/sh
# Data-driven tests of the experiment spec language (docs/spec.md):
#   tests/data/specs/bad/NAME.yaml   `cadre validate NAME.yaml` exits 2 and
#                                    prints exactly NAME.stderr;
#   tests/data/specs/warn/NAME.yaml  exits 0 and prints exactly NAME.stderr;
#   tests/data/specs/good/NAME.yaml  exits 0, and `cadre plan --json
#                                    NAME.yaml` prints exactly NAME.plan.json;
# and specs generated here: one over the 1 MiB limit, one just under it.
# Each case runs inside its directory, so messages name just NAME.yaml.
#
#   tests/spec-cases.sh           run the cases ($top_builddir/cadre)
#   tests/spec-cases.sh --regen   rewrite the expected files in $top_srcdir
#                                 from the current output: review every
#                                 change (git diff) before committing it.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
cadre=$top_builddir/cadre
specs=$top_srcdir/tests/data/specs

regen=0
case ${1:-} in
--regen) regen=1 ;;
"") ;;
*) echo "usage: $0 [--regen]" >&2; exit 2 ;;
esac

if [ ! -x "$cadre" ]; then
	echo "spec-cases: $cadre not built" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spec-cases.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

pass=0
fail=0

ok() {
	pass=$((pass + 1))
	echo "PASS: $1"
}

not_ok() {
	fail=$((fail + 1))
	echo "FAIL: $1: $2"
}

# same EXPECTED ACTUAL: byte-exact, the diff shown when not.
same() {
	if [ ! -f "$1" ]; then
		echo "  (no expected file $1)"
		return 1
	fi
	if cmp -s "$1" "$2"; then
		return 0
	fi
	diff -u "$1" "$2" | sed 's/^/  /'
	return 1
}

# run_in DIR ARGS...: cadre's exit status in $rc, output in $tmp/out, $tmp/err.
run_in() {
	dir=$1
	shift
	(cd "$dir" && "$cadre" "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

for f in "$specs"/bad/*.yaml; do
	name=$(basename "$f" .yaml)
	run_in "$specs/bad" validate "$name.yaml"
	if [ "$regen" = 1 ]; then
		cp "$tmp/err" "$specs/bad/$name.stderr"
	fi
	if [ "$rc" != 2 ]; then
		not_ok "bad/$name" "exit status $rc, expected 2"
		sed 's/^/  /' "$tmp/err"
	elif [ -s "$tmp/out" ]; then
		not_ok "bad/$name" "unexpected output on stdout"
	elif ! same "$specs/bad/$name.stderr" "$tmp/err"; then
		not_ok "bad/$name" "stderr differs from $name.stderr"
	else
		ok "bad/$name"
	fi
done

for f in "$specs"/warn/*.yaml; do
	name=$(basename "$f" .yaml)
	run_in "$specs/warn" validate "$name.yaml"
	if [ "$regen" = 1 ]; then
		cp "$tmp/err" "$specs/warn/$name.stderr"
	fi
	if [ "$rc" != 0 ]; then
		not_ok "warn/$name" "exit status $rc, expected 0"
		sed 's/^/  /' "$tmp/err"
	elif [ -s "$tmp/out" ]; then
		not_ok "warn/$name" "unexpected output on stdout"
	elif ! same "$specs/warn/$name.stderr" "$tmp/err"; then
		not_ok "warn/$name" "stderr differs from $name.stderr"
	else
		ok "warn/$name"
	fi
done

for f in "$specs"/good/*.yaml; do
	name=$(basename "$f" .yaml)
	run_in "$specs/good" validate "$name.yaml"
	if [ "$rc" != 0 ] || [ -s "$tmp/err" ] || [ -s "$tmp/out" ]; then
		not_ok "good/$name" "validate: exit status $rc, expected 0 and no output"
		sed 's/^/  /' "$tmp/err"
		continue
	fi
	run_in "$specs/good" plan --json "$name.yaml"
	if [ "$regen" = 1 ]; then
		cp "$tmp/out" "$specs/good/$name.plan.json"
	fi
	if [ "$rc" != 0 ] || [ -s "$tmp/err" ]; then
		not_ok "good/$name" "plan --json: exit status $rc"
		sed 's/^/  /' "$tmp/err"
	elif ! same "$specs/good/$name.plan.json" "$tmp/out"; then
		not_ok "good/$name" "plan --json differs from $name.plan.json"
	else
		ok "good/$name"
	fi
done

# A valid spec followed by comments up to exactly $2 bytes, into $1.
sized_spec() {
	awk -v target="$2" 'BEGIN {
		head = "version: 1\nname: big\ntrainer:\n  data: /scratch/shards\n"
		printf "%s", head
		n = length(head)
		line = "# padding padding padding padding padding padding padding pad\n"
		while (n + length(line) <= target) {
			printf "%s", line
			n += length(line)
		}
		if (target - n >= 2) {
			printf "#"
			for (i = 2; i < target - n; i++)
				printf "x"
			printf "\n"
		}
	}' >"$1"
}

# One byte over the limit: refused by its size alone, before parsing.
sized_spec "$tmp/too-large.yaml" 1048577
run_in "$tmp" validate too-large.yaml
printf '%s\n' "too-large.yaml: error: file is 1048577 bytes; specs are limited to 1 MiB" >"$tmp/expected"
if [ "$rc" = 2 ] && same "$tmp/expected" "$tmp/err"; then
	ok "generated/too-large"
else
	not_ok "generated/too-large" "exit status $rc"
fi

# Exactly at the limit: valid.
sized_spec "$tmp/at-limit.yaml" 1048576
run_in "$tmp" validate at-limit.yaml
if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ]; then
	ok "generated/at-limit"
else
	not_ok "generated/at-limit" "exit status $rc"
	sed 's/^/  /' "$tmp/err"
fi

# The same over standard input, which has no size to check beforehand.
"$cadre" validate - <"$tmp/too-large.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
printf '%s\n' "<stdin>: error: file is more than 1048576 bytes; specs are limited to 1 MiB" >"$tmp/expected"
if [ "$rc" = 2 ] && same "$tmp/expected" "$tmp/err"; then
	ok "generated/too-large-stdin"
else
	not_ok "generated/too-large-stdin" "exit status $rc"
fi

echo "spec-cases: $pass passed, $fail failed"
[ "$fail" = 0 ]
