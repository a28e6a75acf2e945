# Sourced by the shell tests (POSIX sh) once top_srcdir and top_builddir
# are set, so that each states only what it tests. A FAIL line sets
# $failed, which the test exits with at its end, so that one failure does
# not hide the cases after it. $work is the test's scratch directory under
# ${TMPDIR:-/tmp}, named after it and removed at exit; a test with more to
# clean up sets its own EXIT trap, which must remove $work too.
test_name=$(basename "$0" .sh)
failed=0
# $tag, where a test sets it, starts each line: tests whose logs are
# read together name themselves in every line.
pass() { echo "PASS: ${tag:+$tag: }$*"; }
fail() { echo "FAIL: ${tag:+$tag: }$*"; failed=1; }
# skip WHY: automake's status for a test that cannot run here.
skip() { echo "SKIP: $*"; exit 77; }
# check WHAT GOT EXPECTED
check() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1: got '$2', expected '$3'"
	fi
}

work=$(mktemp -d "${TMPDIR:-/tmp}/cadre-$test_name.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP

# wait_for SECONDS CMD...: runs CMD every $wait_tick seconds (0.1 unless
# the test sets it) until it succeeds; 1 when SECONDS pass first.
wait_for() {
	_tries=$(awk -v s="$1" -v t="${wait_tick:-0.1}" \
	    'BEGIN { print int(s / t + 0.5) }')
	shift
	_n=0
	while ! "$@" 2>/dev/null; do
		_n=$((_n + 1))
		[ $_n -ge "$_tries" ] && return 1
		sleep "${wait_tick:-0.1}"
	done
	return 0
}
