#!/bin/sh
# etc/bash-completion/cadre: sources in bash without errors and, driven
# through COMP_WORDS/COMP_CWORD as bash's completion does, completes
# `cadre rep<TAB>` to report (from `cadre --help`, and from the built-in
# list when no cadre can run), report's options and --format values, spec
# files and directories for validate, and run ids from the state
# directory's runs/. Skipped (77) without bash.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
command -v bash >/dev/null 2>&1 || skip "no bash"
comp=$top_srcdir/etc/bash-completion/cadre
cadre=$top_builddir/cadre

if bash -c '. "$1" && complete -p cadre' sh "$comp" > "$work/out" 2>&1 &&
    grep -q '^complete -F _cadre cadre$' "$work/out"; then
	pass "sources in bash and registers _cadre for cadre"
else
	fail "sourcing: $(cat "$work/out")"
fi

# complete CWORD WORD...: the completions, space-separated, run in $work
complete_words() {
	(cd "$work" && CADRE_STATE_DIR=$work/state CADRE_RUNTIME_DIR=$work/runtime bash -c '
		. "$1"; shift
		COMP_CWORD=$1; shift
		COMP_WORDS=("$@")
		_cadre
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
	    sh "$comp" "$@")
}
completes() {	# completes WHAT WANT CWORD WORDS...
	what=$1 want=$2; shift 2
	got=$(complete_words "$@")
	if [ "$got" = "$want" ]; then
		pass "$what -> $want"
	else
		fail "$what: got '$got', expected '$want'"
	fi
}

completes "cadre rep<TAB>" "report " 1 "$cadre" rep
completes "cadre rep<TAB> with no cadre to run" "report " 1 "$work/no-such-cadre" rep
completes "cadre report --f<TAB>" "--format " 2 "$cadre" report --f
completes "cadre report --format <TAB>" "csv json md " 3 "$cadre" report --format ""
completes "cadre report --pl<TAB>" "--plot " 2 "$cadre" report --pl
completes "cadre --h<TAB>" "--help " 1 "$cadre" --h

mkdir "$work/specs" "$work/state" "$work/state/runs" \
    "$work/state/runs/0123456789ab" "$work/state/runs/fedcba987654"
: > "$work/specs/a.yaml"; : > "$work/specs/b.yml"; : > "$work/specs/c.txt"
completes "cadre validate specs/<TAB>: specs and directories" "specs/a.yaml specs/b.yml " \
    2 "$cadre" validate specs/
completes "cadre logs 01<TAB>: run ids" "0123456789ab " 2 "$cadre" logs 01
completes "cadre report --compare fe<TAB>" "fedcba987654 " 3 "$cadre" report --compare fe
exit $failed
