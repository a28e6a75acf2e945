#!/bin/sh
# The slurm backend (sched/sched_slurm.c) against a real Slurm: job
# scripts rendered from a spec (a test template around the real
# directives) are submitted with sbatch and polled with squeue to done,
# failed (exit 3), cancelled (scancel) and timeout (1 minute limit, after
# SIGUSR1 at the grace); an unknown job id is "unknown"; validate's
# preflight asks scontrol for the partition and its MaxTime; without
# slurmctld, poll fails instead. The run dir has a quote, $, % and spaces
# in its name.
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
trap 'echo usr1 > "$run_dir/usr1"' USR1
. "$run_dir/work.sh"
TEMPLATE
cat > "$work/spec.yaml" <<'SPEC'
version: 1
name: schedtest
scheduler:
  backend: slurm
  time_limit: 1m
  signal_grace: 45s
  extra: ["--comment=it's $(id) 50%"]
agent: { startup_timeout: 10s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }
measure: { skip_steps: 0 }
matrix:
  resources.nodes: [1, 2]
SPEC

# newrun NAME NODES BODY: a run dir holding work.sh; prints its path
newrun() {
	_d="$work/$1 it's \$x 50%"
	mkdir "$_d"
	printf '%s\n' "$3" > "$_d/work.sh"
	echo "$_d"
}
# submit DIR RUN_INDEX: prints the job id
submit() {
	"$tool" submit "$tmpl" "$work/spec.yaml" "$2" "$1"
}

d_done=$(newrun done 2 'srun -N2 sh -c "echo \$SLURMD_NODENAME" > nodes; echo ok > written')
d_fail=$(newrun fail 1 'exit 3')
d_cancel=$(newrun cancel 1 'sleep 300 & wait $!')
d_limit=$(newrun limit 1 'while :; do sleep 1 & wait $!; done')
d_real=$(newrun real 1 '')
cp "$top_srcdir/tests/slurm/fake-agent" "$work/fake-agent"
chmod 0755 "$work/fake-agent"

j_done=$(submit "$d_done" 1) || fail "submit (2 nodes)"
j_fail=$(submit "$d_fail" 0) || fail "submit (exit 3)"
j_cancel=$(submit "$d_cancel" 0) || fail "submit (to cancel)"
j_limit=$(submit "$d_limit" 0) || fail "submit (time limit)"
# the real template, with a stand-in agent
j_real=$(SCHEDTOOL_AGENT=$work/fake-agent "$tool" submit \
    "$top_srcdir/etc/templates" "$work/spec.yaml" 1 "$d_real") ||
    fail "submit (real template)"
[ $failed -eq 0 ] || exit 1
pass "5 jobs submitted: $j_done $j_fail $j_cancel $j_limit $j_real"

state() { "$tool" poll "$1" | cut -d' ' -f2; }
# job_nodes JOB: the nodes Slurm gave the job (its NodeList). Five jobs
# share 4 nodes, so which ones a job gets depends on the others' timing.
job_nodes() {
	scontrol show job "$1" 2>/dev/null | sed -n 's/^ *NodeList=//p'
}
# hostnames LIST PREFIX: one "PREFIX node" per node of LIST, sorted, on a line
hostnames() {
	scontrol show hostnames "$1" 2>/dev/null | sort |
	    sed "s/^/${2-}/" | tr '\n' ' '
}

# find: the newest live job of a name (runs 0 and 1 have one name each;
# run 0's newest is the time-limit job, alive for a minute)
name0=$(sed -n 's/^#SBATCH --job-name=//p' "$d_limit/job.sh")
check "find: newest live job of run 0" "$("$tool" find "$name0")" "$j_limit"
check "find: no such job" "$("$tool" find cadre-000000000000)" none
is_state() { [ "$(state "$1")" = "$2" ]; }

# The spec's values reached sbatch: directives in the script, the extra
# word (with a quote, $ and %) as one argv word.
check "#SBATCH --signal in job.sh" \
    "$(grep -c '^#SBATCH --signal=B:USR1@45$' "$d_limit/job.sh")" 1
scontrol show job "$j_fail" > "$work/desc"
check "extra word reached sbatch whole" \
    "$(sed -n 's/^ *Comment=//p' "$work/desc" | sed 's/ *$//')" \
    "it's \$(id) 50%"
check "time limit from the directives" \
    "$(grep -o 'TimeLimit=[^ ]*' "$work/desc")" "TimeLimit=00:01:00"

# cancel a running job
if wait_for 30 is_state "$j_cancel" running; then
	pass "job $j_cancel running"
else
	fail "job $j_cancel: $(state "$j_cancel"), expected running"
fi
"$tool" cancel "$j_cancel" || fail "cancel $j_cancel"
if wait_for 30 is_state "$j_cancel" cancelled; then
	pass "cancel: job $j_cancel cancelled"
else
	fail "cancel: job $j_cancel $(state "$j_cancel")"
fi

check "done: state" "$(wait_for 30 is_state "$j_done" done; state "$j_done")" done
check "done: the script wrote its file" "$(cat "$d_done/written" 2>/dev/null)" ok
n_done=$(job_nodes "$j_done")
check "done: 2 nodes allocated" "$(hostnames "$n_done" | wc -w)" 2
check "done: srun in the job reached both" \
    "$(sort "$d_done/nodes" 2>/dev/null | tr '\n' ' ')" "$(hostnames "$n_done")"
check "done: output in the run dir" "$(test -f "$d_done/job.out" && echo yes)" yes
check "failed: state and exit code" \
    "$(wait_for 30 is_state "$j_fail" failed; "$tool" poll "$j_fail" | cut -d' ' -f2,3)" \
    "failed 3"

check "unknown job id" "$(state 999999)" unknown
check "unknown among known" \
    "$("$tool" poll 999998 "$j_done" | cut -d' ' -f2 | tr '\n' ' ')" \
    "unknown done "

# time limit: 1 minute, SIGUSR1 45 s before it (Slurm checks both about
# every 30 s, hence the bound)
if wait_for 150 is_state "$j_limit" timeout; then
	pass "time limit: job $j_limit timeout"
else
	fail "time limit: job $j_limit $(state "$j_limit")"
fi
check "time limit: SIGUSR1 before it" "$(cat "$d_limit/usr1" 2>/dev/null)" usr1

# The real template on 2 nodes: serve on each, launch on the head with
# the allocation's nodes; SIGUSR1 (B:USR1@45) reaches launch, which exits
# 0 (the stand-in), and the job is done.
check "real template: done" \
    "$(wait_for 60 is_state "$j_real" done; state "$j_real")" done
check "real template: SIGUSR1 reached launch" \
    "$(cat "$d_real/usr1" 2>/dev/null)" usr1
n_real=$(job_nodes "$j_real")
check "real template: 2 nodes allocated" "$(hostnames "$n_real" | wc -w)" 2
check "real template: serve on both nodes" \
    "$(sort "$d_real/serve.log" 2>/dev/null | tr '\n' ' ')" \
    "$(hostnames "$n_real" 'serve ')"
check "real template: launch got the node list" \
    "$(sed -n '/^--nodes$/{n;p;}' "$d_real/launch.args" 2>/dev/null)" \
    "$n_real"

# validate's preflight asks scontrol: a time limit over the partition's
# MaxTime and a partition the cluster lacks are located errors
cadre=$top_builddir/cadre
sed 's/^  time_limit: 1m$/  time_limit: 45m/; s/^  backend: slurm$/  backend: slurm\n  partition: short/' \
    "$work/spec.yaml" > "$work/long.yaml"
"$cadre" validate "$work/long.yaml" 2> "$work/err"
check "preflight: time_limit over MaxTime refused" "$?:$(cat "$work/err")" \
    "2:$work/long.yaml:6:15: error: scheduler.time_limit 45m is longer than partition short's MaxTime 30m (00:30:00): Slurm would keep the jobs pending (PartitionTimeLimit); use 30m or less, or another partition"
sed 's/short/nosuch/; s/45m/10m/' "$work/long.yaml" > "$work/nosuch.yaml"
"$cadre" validate "$work/nosuch.yaml" 2> "$work/err"
check "preflight: an unknown partition refused" "$?:$(cat "$work/err")" \
    "2:$work/nosuch.yaml:5:14: error: scheduler.partition: this cluster has no partition 'nosuch' (scontrol show partition lists them)"
"$cadre" validate "$work/spec.yaml" 2> "$work/err"
check "preflight: the default partition, no MaxTime: valid" "$?:$(cat "$work/err")" "0:"

# slurmctld down: poll fails (a retry later), it does not say "unknown"
kill "$(cat "$slurm/run/slurmctld.pid")"
wait_for 10 sh -c "! kill -0 $(cat "$slurm/run/slurmctld.pid")"
if "$tool" poll "$j_done" > "$work/out" 2>&1; then
	fail "poll without slurmctld: $(cat "$work/out")"
else
	pass "poll without slurmctld fails"
fi
exit $failed
