# Shared by tests/daemon/local-*.sh (POSIX sh): the local backend driven
# through tests/daemon/schedtool, with tests/daemon/local-trainer (a fake
# trainer) standing in for cadre-train behind the real agents and launch.
# Sets $tool, $work (private, removed at exit), $spec (2 nodes, 1 minute,
# 30 s grace) and the SCHEDTOOL_* variables; every job submitted with
# submit is cancelled at exit if it still runs.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
tag=$test_name
tool=$top_builddir/tests/daemon/schedtool
agent=$top_builddir/cadre-agent
templates=$top_srcdir/etc/templates
for f in "$tool" "$agent"; do
	[ -x "$f" ] || { echo "$test_name: $f not built" >&2; exit 99; }
done
if ! command -v mpirun >/dev/null 2>&1 || ! command -v bash >/dev/null 2>&1; then
	echo "$test_name: skipped: no Open MPI (mpirun) or no bash"
	exit 77
fi
chmod 0700 "$work"
# the job's Open MPI directories go under the test's own dir
TMPDIR=$work
SCHEDTOOL_BACKEND=local
SCHEDTOOL_LOCAL_DIR=$work/records
SCHEDTOOL_AGENT=$agent
SCHEDTOOL_TRAINER=$top_srcdir/tests/daemon/local-trainer
export TMPDIR SCHEDTOOL_BACKEND SCHEDTOOL_LOCAL_DIR SCHEDTOOL_AGENT \
	SCHEDTOOL_TRAINER
jobs=

cleanup() {
	for j in $jobs; do "$tool" cancel "$j" >/dev/null 2>&1; done
	for j in $jobs; do wait_state 20 "$j" '' >/dev/null 2>&1; done
	rm -rf "$work"
}
trap cleanup EXIT

# A failure the next cases build on: end the test.
fatal() { fail "$*"; exit 1; }

spec=$work/spec.yaml
cat >"$spec" <<'SPEC'
version: 1
name: localtest
scheduler: { backend: local, time_limit: 1m, signal_grace: 30s }
resources: { nodes: 2 }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent/shards, steps: 10 }
measure: { skip_steps: 0 }
SPEC

# newrun NAME: a fresh run dir $work/NAME (0700), printed.
newrun() {
	mkdir -m 0700 "$work/$1" && echo "$work/$1"
}

# submit RUN_DIR: submits run 0 of $spec into RUN_DIR; the job id is
# printed and remembered for cleanup.
submit() {
	_id=$("$tool" submit "$templates" "$spec" 0 "$1") || return 1
	jobs="$jobs $_id"
	echo "$_id"
}

# state JOB: the state poll reports.
state() {
	"$tool" poll "$1" | cut -d' ' -f2
}

# wait_state SECONDS JOB STATE: polls (every 0.2 s) until JOB is in STATE
# ('': any final state); prints the poll line.
wait_state() {
	_n=0
	while :; do
		_line=$("$tool" poll "$2")
		_st=$(echo "$_line" | cut -d' ' -f2)
		case $_st in
		"$3") break ;;
		queued|starting|running) ;;
		*) [ -z "$3" ] && break ;;
		esac
		_n=$((_n + 1))
		[ $_n -ge $(($1 * 5)) ] && break
		sleep 0.2
	done
	echo "$_line"
	[ -z "$3" ] || [ "$_st" = "$3" ]
}

# procs_of DIR: the processes whose command line names DIR.
procs_of() {
	for _p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$_p/cmdline"; } 2>/dev/null | grep -qF "$1" &&
			echo "${_p#/proc/}"
	done
	return 0
}

# use_trainer: the real cadre-train as the runs' trainer, and
# $work/shards of a tiny text (skips without prep).
use_trainer() {
	trainer=$top_builddir/cadre-train
	[ -x "$trainer" ] || { echo "$test_name: $trainer not built" >&2; exit 99; }
	if ! "$trainer" prep --help >/dev/null 2>&1; then
		echo "$test_name: skipped: cadre-train has no prep (built without utf8proc)"
		exit 77
	fi
	SCHEDTOOL_TRAINER=$trainer
	# Open MPI's own allocations are not ours to report.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	OMP_NUM_THREADS=1
	export SCHEDTOOL_TRAINER ASAN_OPTIONS OMP_NUM_THREADS
	sh "$top_srcdir/tests/trainer/tinytext.sh" > "$work/text.txt"
	"$trainer" vocab --quiet --size 120 -o "$work/vocab.txt" "$work/text.txt" || fatal "vocab"
	"$trainer" prep --vocab "$work/vocab.txt" --format text --task pretrain \
		--seq-len 32 --out "$work/shards" "$work/text.txt" >"$work/prep.log" 2>&1 ||
		fatal "prep: $(cat "$work/prep.log")"
}
