#!/bin/sh
# The slurm-rest backend (sched/sched_slurmrest.c, libcurl) against the
# real slurmrestd of tests/slurm/start.sh on its unix socket, run as the
# REST user (rest_auth/local): jobs reach done, failed (exit 3) and
# cancelled; the real template (etc/templates/slurm.sh.in, with a
# stand-in agent) signals itself before the time limit, as slurmrestd
# cannot ask for B:USR1; an unknown id is "unknown"; extra sbatch words are
# refused; the token never appears in a message; without slurmrestd, poll
# fails.
. "$top_srcdir/tests/slurm/lib.sh"
tool=$top_builddir/tests/daemon/schedtool
[ -x "$tool" ] || { echo "FAIL: $tool not built"; exit 99; }

tmpl=$work/templates
mkdir "$tmpl"
cat > "$tmpl/slurm.sh.in" <<'TEMPLATE'
#!/bin/bash
@DIRECTIVES@
run_dir=@RUN_DIR@
cd "$run_dir" || exit 1
. "$run_dir/work.sh"
TEMPLATE
spec() {
	cat <<SPEC
version: 1
name: resttest
scheduler:
  backend: slurm-rest
  time_limit: 1m
  signal_grace: 45s
  rest: { url: "unix://$rest_sock" }
  $1
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }
measure: { skip_steps: 0 }
SPEC
}
spec "" > "$work/spec.yaml"
spec 'extra: ["--exclusive"]' > "$work/extra.yaml"
cp "$top_srcdir/tests/slurm/fake-agent" "$work/fake-agent"
chmod 0755 "$work/fake-agent"
chmod -R a+rX "$tmpl" "$work/spec.yaml" "$work/extra.yaml"

# As the REST user, whom rest_auth/local trusts.
rest() {
	runuser -u "$rest_user" -- env SCHEDTOOL_BACKEND=slurm-rest \
	    SCHEDTOOL_REST_URL="unix://$rest_sock" \
	    SCHEDTOOL_AGENT="$work/fake-agent" \
	    ${SLURM_JWT:+SLURM_JWT="$SLURM_JWT"} "$tool" "$@"
}
# newrun NAME BODY: a run dir of the REST user holding work.sh
newrun() {
	_d="$work/$1 it's \$x 50%"
	mkdir "$_d"
	printf '%s\n' "$2" > "$_d/work.sh"
	chown -R "$rest_user" "$_d"
	echo "$_d"
}
state() { rest poll "$1" | cut -d' ' -f2; }
is_state() { [ "$(state "$1")" = "$2" ]; }

d_done=$(newrun done 'echo ok > written')
d_fail=$(newrun fail 'exit 3')
d_cancel=$(newrun cancel 'sleep 300 & wait $!')
d_real=$(newrun real '')
j_done=$(rest submit "$tmpl" "$work/spec.yaml" 0 "$d_done") || fail "submit"
j_fail=$(rest submit "$tmpl" "$work/spec.yaml" 0 "$d_fail") || fail "submit"
j_cancel=$(rest submit "$tmpl" "$work/spec.yaml" 0 "$d_cancel") ||
    fail "submit"
j_real=$(rest submit "$top_srcdir/etc/templates" "$work/spec.yaml" 0 \
    "$d_real") || fail "submit (real template)"
[ $failed -eq 0 ] || exit 1
pass "4 jobs submitted through slurmrestd: $j_done $j_fail $j_cancel $j_real"

check "done" "$(wait_for 30 is_state "$j_done" done; state "$j_done")" done
check "done: the script ran in its run dir" \
    "$(cat "$d_done/written" 2>/dev/null)" ok
check "done: output in the run dir" \
    "$(test -f "$d_done/job.out" && echo yes)" yes
check "failed: state and exit code" \
    "$(wait_for 30 is_state "$j_fail" failed; rest poll "$j_fail" | cut -d' ' -f2,3)" \
    "failed 3"
check "time limit from the job properties" \
    "$(scontrol show job "$j_done" | grep -o 'TimeLimit=[^ ]*')" "TimeLimit=00:01:00"
if wait_for 30 is_state "$j_cancel" running; then
	rest cancel "$j_cancel" || fail "cancel $j_cancel"
	check "cancelled" \
	    "$(wait_for 30 is_state "$j_cancel" cancelled; state "$j_cancel")" \
	    cancelled
else
	fail "job $j_cancel: $(state "$j_cancel"), expected running"
fi
check "unknown job id" "$(state 999999)" unknown
if rest cancel 999999 2>/dev/null; then
	fail "cancel of an unknown job succeeded"
else
	pass "cancel of an unknown job fails"
fi
if rest submit "$tmpl" "$work/extra.yaml" 0 "$d_done" 2>"$work/err"; then
	fail "extra sbatch words accepted"
elif grep -q "scheduler.extra cannot be passed to slurmrestd" "$work/err"; then
	pass "extra sbatch words refused"
else
	fail "extra words: $(cat "$work/err")"
fi

# The real template signals itself 15 s in (1m limit, 45s grace); the
# stand-in launch exits 0 on SIGUSR1, the stand-in serve ran on the node.
check "real template: done" \
    "$(wait_for 60 is_state "$j_real" done; state "$j_real")" done
check "real template: SIGUSR1 reached launch" \
    "$(cat "$d_real/usr1" 2>/dev/null)" usr1
check "real template: serve ran on the node" \
    "$(sed 's/node[1-4]$/nodeN/' "$d_real/serve.log" 2>/dev/null)" "serve nodeN"

# A token is sent but never written in a message, also when it fails.
SLURM_JWT=cadre-secret-token-4711
rest poll "$j_done" > "$work/out" 2>&1 || true
runuser -u "$rest_user" -- env SCHEDTOOL_BACKEND=slurm-rest \
    SCHEDTOOL_REST_URL=http://127.0.0.1:1 SLURM_JWT="$SLURM_JWT" \
    "$tool" poll 1 >> "$work/out" 2>&1 && fail "poll of a closed port"
if grep -q 4711 "$work/out"; then
	fail "the token appears in the output"
else
	pass "the token appears in no message"
fi
unset SLURM_JWT

kill "$(cat "$slurm/run/slurmrestd.pid")"
wait_for 10 sh -c "! test -S '$rest_sock' || ! kill -0 $(cat "$slurm/run/slurmrestd.pid")"
if rest poll "$j_done" > "$work/out" 2>&1; then
	fail "poll without slurmrestd: $(cat "$work/out")"
else
	pass "poll without slurmrestd fails"
fi
exit $failed
