#!/bin/sh
# Every long option in a subcommand's option table appears in its --help,
# every subcommand in the top-level usage and in agent/README.md.
. "$top_srcdir/tests/agent/lib.sh"

for pair in serve:serve rsh:rsh launch:launch rank:rank wrap:wrap main:keygen; do
	file=${pair%%:*} cmd=${pair#*:}
	"$agent" "$cmd" --help > "$work/help" || fail "$cmd --help: status $?"
	opts=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*_argument,.*/\1/p' "$top_srcdir/agent/$file.c")
	[ -n "$opts" ] || fail "no option table found in agent/$file.c"
	for o in $opts; do
		[ "$o" = help ] && continue
		grep -q -- "--$o" "$work/help" || fail "$cmd --help does not mention --$o"
	done
	"$agent" --help | grep -q "^  $cmd " || fail "usage does not list $cmd"
	grep -q "\`$cmd\`\|\`$cmd " "$top_srcdir/agent/README.md" || fail "agent/README.md does not describe $cmd"
done
"$agent" nosuch 2>/dev/null; [ $? = 2 ] || fail "unknown command: status not 2"
"$agent" serve --bogus 2>/dev/null; [ $? = 2 ] || fail "serve --bogus: status not 2"
ok "--help of every subcommand lists its options; usage and README list every subcommand"
exit 0
