#!/bin/sh
# The man pages (man/*.1, man/*.8) render with groff's man macros without
# a warning (-ww), have NAME and SYNOPSIS sections, and cadre(1) names
# every command that `cadre --help` lists. Skipped (77) without groff.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
command -v groff >/dev/null 2>&1 || skip "no groff"

for page in cadre.1 cadred.8 cadre-agent.1 cadre-train.1; do
	f=$top_srcdir/man/$page
	if [ ! -f "$f" ]; then
		fail "$page: missing"
		continue
	fi
	LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -rLL=80n "$f" > "$work/out" 2> "$work/err"
	rc=$?
	if [ $rc = 0 ] && [ ! -s "$work/err" ]; then
		pass "$page renders without warnings"
	else
		fail "$page: groff exit $rc: $(head -n 3 "$work/err")"
	fi
	# groff -Tutf8 overstrikes bold; strip that before looking
	sed 's/.\x08//g' "$work/out" > "$work/text"
	if grep -q '^NAME$' "$work/text" && grep -q '^SYNOPSIS$' "$work/text" &&
	    grep -q '^SEE ALSO$' "$work/text"; then
		pass "$page has NAME, SYNOPSIS and SEE ALSO"
	else
		fail "$page lacks a NAME, SYNOPSIS or SEE ALSO section"
	fi
	[ "$page" = cadre.1 ] && cp "$work/text" "$work/cadre.txt"
done

if [ -x "$top_builddir/cadre" ] && [ -f "$work/cadre.txt" ]; then
	"$top_builddir/cadre" --help | sed -n '/^Commands:$/,/^$/p' | sed '1d;$d' |
	    awk '{ print $1 }' > "$work/commands"
	missing=
	while read -r c; do
		grep -q "^       $c\( \|$\)" "$work/cadre.txt" || missing="$missing $c"
	done < "$work/commands"
	if [ -s "$work/commands" ] && [ -z "$missing" ]; then
		pass "cadre(1) describes every command: $(tr '\n' ' ' < "$work/commands")"
	else
		fail "cadre(1) does not describe:$missing"
	fi
fi
exit $failed
