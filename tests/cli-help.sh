#!/bin/sh
# The cadre command line agrees with its help: `cadre --help` lists every
# command defined in cli/*.c; `cadre CMD --help` exits 0 and lists the
# options of CMD's table in the source, each of which the parser accepts
# (long and short forms); unknown options and commands exit 2 with a message.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
cadre=$top_builddir/cadre
spec=$top_srcdir/tests/data/specs/good/minimal.yaml

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cli-help.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

failed=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=1; }
# expect_rc STATUS WHAT: $rc of the last run must be STATUS.
expect_rc() {
	if [ "$rc" = "$1" ]; then
		pass "$2"
	else
		fail "$2: exit status $rc, expected $1"
	fi
}

# run ARGS...: exit status in $rc, output in $tmp/out and $tmp/err.
run() {
	"$cadre" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# Operands that make CMD succeed, so that only its options are on trial
# (OPTION: the one on trial; export needs --at or --step besides).
# Commands that need cadred or a recorded experiment cannot succeed here:
# for them the test checks that the parser takes each option (no usage
# error), in an empty state dir with no daemon.
operands() {
	case $1 in
	validate|plan) echo "$spec" ;;
	submit|run) echo "$spec" ;;
	status|keys) ;;
	export)
		case ${2:-} in
		at|step|final) echo "nosuchrun $tmp/export" ;;
		*) echo "--step 1 nosuchrun $tmp/export" ;;
		esac ;;
	*) echo nosuchexp ;;
	esac
}
needs_state() {
	case $1 in
	validate|plan|keys) return 1 ;;
	*) return 0 ;;
	esac
}
# A sample value for an option's argument name in the help (FMT, DIR, N...).
sample() {
	case $1 in
	'') ;;
	N) echo 1 ;;
	DIR) echo "$tmp/dir" ;;
	FILE) echo "$tmp/none.conf" ;;
	FMT) echo md ;;
	TIME|TIMES) echo 20m ;;
	DURATION) echo 30s ;;
	SPEC) echo "$spec" ;;
	*) echo sample ;;
	esac
}
# option_ok CMD WORDS...: the last run accepted the option WORDS.
option_ok() {
	c=$1
	shift
	if needs_state "$c"; then
		if [ "$rc" -lt 128 ] && [ "$rc" != 2 ] &&
		    ! grep -q "unknown option\|needs an argument" "$tmp/err"; then
			pass "cadre $c $* (parsed)"
		else
			fail "cadre $c $* exited $rc: $(head -n 1 "$tmp/err")"
		fi
	elif [ "$rc" = 0 ]; then
		pass "cadre $c $*"
	else
		fail "cadre $c $* exited $rc: $(head -n 1 "$tmp/err")"
	fi
}
CADRE_STATE_DIR=$tmp/state
CADRE_RUNTIME_DIR=$tmp/runtime
export CADRE_STATE_DIR CADRE_RUNTIME_DIR

run --help
expect_rc 0 "cadre --help"
sed -n '/^Commands:$/,/^$/p' "$tmp/out" | sed '1d;$d' | awk '{ print $1 }' |
    sort >"$tmp/listed"
# The name on the line right after each "const struct cli_command
# cli_cmd_X = {": `.name = "x",` or, positional, `"x", ...`.
sed -n '/^const struct cli_command cli_cmd_[a-z_]* = {$/{n;s/^[[:space:]]*\(\.name = \)\{0,1\}"\([a-z-]*\)",.*/\2/p;}' \
    "$top_srcdir"/cli/*.c | sort >"$tmp/defined"
if [ -s "$tmp/defined" ] && cmp -s "$tmp/defined" "$tmp/listed"; then
	pass "cadre --help lists the commands: $(tr '\n' ' ' <"$tmp/listed")"
else
	fail "commands in cadre --help differ from those in cli/*.c:"
	diff -u "$tmp/defined" "$tmp/listed" | sed 's/^/  /'
fi

# shellcheck disable=SC2013
for cmd in $(cat "$tmp/defined"); do
	run "$cmd" --help
	if [ "$rc" = 0 ] && grep -q "^Usage: cadre $cmd" "$tmp/out"; then
		pass "cadre $cmd --help"
	else
		fail "cadre $cmd --help exited $rc or printed no usage"
		continue
	fi
	run help "$cmd"
	expect_rc 0 "cadre help $cmd"

	# "  -v, --verbose  ..." or "      --rank N  ...": long name, short
	# letter, argument name (or "-").
	sed -n '/^Options:$/,$p' "$tmp/out" |
	    sed -n 's/^  \(-\([a-zA-Z]\), \)\{0,1\} *--\([a-z][a-z-]*\)\( \([A-Z0-9]*\)\)\{0,1\}  .*/\3 \2- \5/p' |
	    sed 's/ \([a-zA-Z]\)- / \1 /' >"$tmp/options"
	awk '{ print $1 }' "$tmp/options" | grep -v '^help$' | sort >"$tmp/helped"

	# The option table of the command in the source: the lines between
	# "<cmd>_options[] = {" and "};" of the form { "name", ... }.
	sed -n "/^static const struct cli_option ${cmd}_options\\[\\] = {\$/,/^};\$/p" \
	    "$top_srcdir"/cli/*.c |
	    sed -n 's/^[[:space:]]*{ "\([a-z][a-z-]*\)",.*/\1/p' | sort >"$tmp/table"
	if cmp -s "$tmp/table" "$tmp/helped"; then
		pass "cadre $cmd --help lists its options: $(tr '\n' ' ' <"$tmp/helped")"
	else
		fail "options in cadre $cmd --help differ from its table:"
		diff -u "$tmp/table" "$tmp/helped" | sed 's/^/  /'
	fi

	while read -r long short arg; do
		[ "$long" = help ] && continue
		val=$(sample "$arg")
		# shellcheck disable=SC2046
		run "$cmd" "--$long" $val $(operands "$cmd" "$long")
		option_ok "$cmd" "--$long" $val
		if [ "$short" != - ]; then
			# shellcheck disable=SC2046
			run "$cmd" "-$short" $val $(operands "$cmd" "$long")
			option_ok "$cmd" "-$short" $val
		fi
	done <"$tmp/options"

	# shellcheck disable=SC2046
	run "$cmd" --no-such-option $(operands "$cmd")
	if [ "$rc" = 2 ] && grep -q "unknown option '--no-such-option'" "$tmp/err"; then
		pass "cadre $cmd --no-such-option exits 2"
	else
		fail "cadre $cmd --no-such-option exited $rc: $(cat "$tmp/err")"
	fi
	# shellcheck disable=SC2046
	run "$cmd" -Z $(operands "$cmd")
	if [ "$rc" = 2 ] && grep -q "unknown option '-Z'" "$tmp/err"; then
		pass "cadre $cmd -Z exits 2"
	else
		fail "cadre $cmd -Z exited $rc: $(cat "$tmp/err")"
	fi
done

run no-such-command
if [ "$rc" = 2 ] && grep -q "unknown command 'no-such-command'" "$tmp/err"; then
	pass "an unknown command exits 2"
else
	fail "cadre no-such-command exited $rc"
fi
run validat "$spec"
if [ "$rc" = 2 ] && grep -q "did you mean 'validate'" "$tmp/err"; then
	pass "a misspelt command gets a suggestion"
else
	fail "cadre validat exited $rc: $(cat "$tmp/err")"
fi
run --no-such-option
expect_rc 2 "an unknown global option"
run
expect_rc 2 "no command"
run --version
if [ "$rc" = 0 ] && grep -q '^cadre [0-9]' "$tmp/out"; then
	pass "cadre --version"
else
	fail "cadre --version exited $rc"
fi
run validate
expect_rc 2 "validate without a file"
run plan "$spec" "$spec"
expect_rc 2 "plan with two files"

exit $failed
