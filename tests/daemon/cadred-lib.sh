# Shared by tests/daemon/cadred-*.sh (POSIX sh), after $work exists (the
# test made it, or tests/slurm/lib.sh did): cadred with private state and
# runtime dirs under $work/d, its config in $work/d/cadred.conf, the fake
# agent and fake trainer (tests/daemon/cadred-fake-*) copied to $work,
# and the fake trainer's modes in $CADRED_FAKE_CTL ($work/ctl).
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
cadred_bin=$top_builddir/cadred
cadre_bin=$top_builddir/cadre
for _f in "$cadred_bin" "$cadre_bin"; do
	[ -x "$_f" ] || { echo "FAIL: $_f not built"; exit 99; }
done
mkdir -p -m 0700 "$work/d" "$work/d/state" "$work/d/run" "$work/ctl"
cp "$top_srcdir/tests/daemon/cadred-fake-agent" "$work/fake-agent"
cp "$top_srcdir/tests/daemon/cadred-fake-trainer" "$work/fake-trainer"
chmod 0755 "$work/fake-agent" "$work/fake-trainer"
CADRE_STATE_DIR=$work/d/state
CADRE_RUNTIME_DIR=$work/d/run
XDG_CONFIG_HOME=$work/d/config
CADRED_FAKE_CTL=$work/ctl
export CADRE_STATE_DIR CADRE_RUNTIME_DIR XDG_CONFIG_HOME CADRED_FAKE_CTL
conf=$work/d/cadred.conf
cat > "$conf" <<CONF
# cadred's config for this test
poll_interval = 0.3
agent = $work/fake-agent
trainer = $work/fake-trainer
templates = $top_srcdir/etc/templates
cmd_timeout = 3
log_level = info
CONF
cadred_pid=

# $cadred_as: a command prefix that runs cadred and cadre as another user
# and execs (setpriv ...), so that $cadred_pid is cadred's; empty: as
# ourselves.
cadred_as=
cadre() { $cadred_as "$cadre_bin" "$@"; }

# cadred_answers: cadred itself answers `cadre status` (without it, status
# reads the state directory and says that cadred is not running).
cadred_answers() {
	_e=$(cadre status 2>&1 >/dev/null) && ! echo "$_e" | grep -q "cadred is not running"
}

# cadred_start: in the background, logging to $work/d/cadred.log; waits
# until it answers.
cadred_start() {
	# 9>&-: not the private Slurm's lock (tests/slurm/lib.sh), which a
	# daemon left behind would hold
	$cadred_as "$cadred_bin" --foreground --config "$conf" >> "$work/d/cadred.log" 2>&1 9>&- &
	cadred_pid=$!
	_n=0
	while ! cadred_answers; do
		_n=$((_n + 1))
		if [ $_n -gt 100 ] || ! kill -0 $cadred_pid 2>/dev/null; then
			echo "FAIL: cadred did not start:"
			tail -n 20 "$work/d/cadred.log"
			exit 1
		fi
		sleep 0.1
	done
}

# cadred_stop [SIGNAL]: stops it and waits for it.
cadred_stop() {
	[ -n "$cadred_pid" ] || return 0
	kill -"${1:-TERM}" $cadred_pid 2>/dev/null
	wait $cadred_pid 2>/dev/null
	cadred_pid=
}

# run_field RUN FIELD: a member of the run in `cadre status RUN --json`
run_field() {
	cadre status "$1" --json 2>/dev/null | sed -n "s/^      \"$2\": \"*\([^\",]*\)\"*,*\$/\1/p" | head -n 1
}

# wait_until SECONDS CMD...: polls CMD until it succeeds, by the clock
# (a status call may take a while when the scheduler hangs).
wait_until() {
	_end=$(($(date +%s) + $1))
	shift
	while ! "$@" 2>/dev/null; do
		[ "$(date +%s)" -ge $_end ] && return 1
		sleep 0.2
	done
	return 0
}

# wait_run SECONDS RUN STATE: polls until the run is in STATE
run_is() { [ "$(run_field "$1" state)" = "$2" ]; }
wait_run() { wait_until "$1" run_is "$2" "$3"; }

# run_ids SPEC: the run ids of a spec, in plan order
run_ids() {
	cadre plan --json "$1" | sed -n 's/^ *"id": "\([0-9a-f]*\)",*$/\1/p'
}

# cadred_cleanup: at exit, cadred stopped and $work removed (the trap
# use_real_agent sets; a test that needs more sets its own).
cadred_cleanup() {
	cadred_stop KILL
	rm -rf "$work"
}

# use_real_agent: cadred (and cadre run) start the real cadre-agent, with
# its launch and mpirun, on the local backend; the fake trainer stays.
# Exits 77 without Open MPI or bash.
use_real_agent() {
	trap cadred_cleanup EXIT
	[ -x "$top_builddir/cadre-agent" ] ||
	    { echo "FAIL: $top_builddir/cadre-agent not built"; exit 99; }
	if ! command -v mpirun >/dev/null 2>&1 || ! command -v bash >/dev/null 2>&1; then
		echo "SKIP: no Open MPI (mpirun) or no bash"
		exit 77
	fi
	TMPDIR=$work	# the job's Open MPI directories
	export TMPDIR
	sed -i "s|^agent = .*|agent = $top_builddir/cadre-agent|" "$conf"
}

# use_real_programs: cadred runs the real cadre-agent and cadre-train
# (end-to-end tests) instead of the fakes; exits 77 when they cannot run.
use_real_programs() {
	for _p in "$top_builddir/cadre-agent" "$top_builddir/cadre-train"; do
		[ -x "$_p" ] || { echo "SKIP: $_p not built"; exit 77; }
	done
	"$top_builddir/cadre-train" prep --help >/dev/null 2>&1 ||
	    { echo "SKIP: cadre-train built without prep (utf8proc)"; exit 77; }
	command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
	cat > "$conf" <<CONF
poll_interval = 0.5
agent = $top_builddir/cadre-agent
trainer = $top_builddir/cadre-train
templates = $top_srcdir/etc/templates
cmd_timeout = 10
log_level = info
CONF
}

# use_min_step_ms MS (after use_real_programs): cadred runs the real
# cadre-train through a wrapper that makes each training step take at
# least MS milliseconds (--min-step-ms), so that what a test times (a
# time limit's signal, a checkpoint mark) lands at the same step on a
# fast machine as on a slow one. `cadre-train train --config ...` stays
# the start of the command line (pgrep finds ranks by it).
use_min_step_ms() {
	cat > "$work/cadre-train" <<WRAP
#!/bin/sh
[ "\$1" = train ] && exec "$top_builddir/cadre-train" "\$@" --min-step-ms $1
exec "$top_builddir/cadre-train" "\$@"
WRAP
	chmod +x "$work/cadre-train"
	sed -i "s|^trainer = .*|trainer = $work/cadre-train|" "$conf"
}
