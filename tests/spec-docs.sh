#!/bin/sh
# docs/spec.md carries the key reference between the lines
# "<!-- keys:begin -->" and "<!-- keys:end -->": it must be exactly the
# output of `cadre keys --markdown` (to update it, paste that output there),
# and every key of the table must have a description.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
cadre=$top_builddir/cadre
doc=$top_srcdir/docs/spec.md

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spec-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

failed=0

if ! "$cadre" keys --markdown >"$tmp/keys" 2>"$tmp/err"; then
	echo "FAIL: cadre keys --markdown exited non-zero"
	cat "$tmp/err"
	exit 1
fi

begins=$(grep -c '^<!-- keys:begin -->$' "$doc")
ends=$(grep -c '^<!-- keys:end -->$' "$doc")
if [ "$begins" != 1 ] || [ "$ends" != 1 ]; then
	echo "FAIL: docs/spec.md needs one '<!-- keys:begin -->' and one '<!-- keys:end -->' line"
	exit 1
fi
sed -n '/^<!-- keys:begin -->$/,/^<!-- keys:end -->$/p' "$doc" | sed '1d;$d' >"$tmp/doc"
if cmp -s "$tmp/keys" "$tmp/doc"; then
	echo "PASS: docs/spec.md key reference equals cadre keys --markdown"
else
	echo "FAIL: docs/spec.md key reference differs from cadre keys --markdown:"
	diff -u "$tmp/doc" "$tmp/keys" | sed 's/^/  /'
	failed=1
fi

# docs/program.md carries the program section's rows the same way,
# between "<!-- program-keys:begin -->" and "<!-- program-keys:end -->":
# the table's two header lines, then every row of a program.* key.
pdoc=$top_srcdir/docs/program.md
{ sed -n 1,2p "$tmp/keys"; grep '^| `program\.' "$tmp/keys"; } >"$tmp/pkeys"
sed -n '/^<!-- program-keys:begin -->$/,/^<!-- program-keys:end -->$/p' "$pdoc" |
    sed '1d;$d' >"$tmp/pdoc"
if [ "$(wc -l <"$tmp/pkeys")" -gt 2 ] && cmp -s "$tmp/pkeys" "$tmp/pdoc"; then
	echo "PASS: docs/program.md key list equals the program.* rows of cadre keys --markdown"
else
	echo "FAIL: docs/program.md key list differs from the program.* rows of cadre keys --markdown:"
	diff -u "$tmp/pdoc" "$tmp/pkeys" | sed 's/^/  /'
	failed=1
fi

# Rows are "| `key` | type | default | allowed | matrix | description |".
rows=$(grep -c '^| `' "$tmp/keys")
if [ "$rows" -lt 10 ]; then
	echo "FAIL: only $rows keys in cadre keys --markdown"
	failed=1
fi
# shellcheck disable=SC2016
undocumented=$(grep '^| `' "$tmp/keys" | sed -n 's/^| `\([^`]*\)`.* | *|$/\1/p')
if [ -n "$undocumented" ]; then
	echo "FAIL: keys without a description: $(echo "$undocumented" | tr '\n' ' ')"
	failed=1
else
	echo "PASS: all $rows keys have a description"
fi

exit $failed
