#!/bin/sh
# Every long option in cadre-train's option table (trainer/main.c) is
# described by `cadre-train synthetic --help`, and every option --help
# names is in the table.
set -eu
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# --version is a command of its own, not in synthetic's table.
{ sed -n 's/^[[:space:]]*{ "\([a-z0-9-]*\)", .*/--\1/p' "$top_srcdir/trainer/main.c"; echo --version; } |
    sort -u > "$work/table"
"$top_builddir/cadre-train" synthetic --help > "$work/help"
grep -o -- '--[a-z][a-z0-9-]*' "$work/help" | sort -u > "$work/helped"
rc=0
for o in $(comm -23 "$work/table" "$work/helped"); do
	echo "FAIL: $o is in the option table but not in --help"
	rc=1
done
for o in $(comm -13 "$work/table" "$work/helped"); do
	echo "FAIL: --help names $o, which is not in the option table"
	rc=1
done
[ "$rc" -eq 0 ] && echo "$(wc -l < "$work/table") options, all in --help"
"$top_builddir/cadre-train" --version | grep -q '^cadre-train ' || { echo "FAIL: --version"; rc=1; }
exit $rc
