#!/bin/sh
# `cadre-agent launch --from-env` without a live scheduler (issue 10):
# the PBS path with a PBS_NODEFILE and a FAKE pbsdsh (no PBS server can
# run here; tests/agent/fake-pbsdsh runs the command on "node K" of this
# machine), and the Slurm path's environment with a FAKE srun and scontrol
# (the real Slurm is tests/slurm/wrapper.sh): the nodes and slots come
# from the environment, launch starts an agent per node itself, the ranks
# run on the right nodes, and the agents are gone afterwards. Also the
# errors: no allocation, a malformed SLURM_TASKS_PER_NODE.
. "$top_srcdir/tests/agent/lib.sh"
need_mpi_hello
bin=$work/bin
mkdir "$bin"
cp "$top_srcdir/tests/agent/fake-pbsdsh" "$bin/pbsdsh"
cp "$top_srcdir/tests/agent/fake-srun" "$bin/srun"
cp "$top_srcdir/tests/agent/fake-scontrol" "$bin/scontrol"
chmod 0755 "$bin/pbsdsh" "$bin/srun" "$bin/scontrol"
FAKE_LOG=$work/fake.log
TMPDIR=$work
export FAKE_LOG TMPDIR
unset SLURM_JOB_ID SLURM_JOB_NODELIST SLURM_NODELIST SLURM_NTASKS_PER_NODE \
    SLURM_TASKS_PER_NODE SLURM_GPUS_ON_NODE PBS_JOBID PBS_NODEFILE \
    CADRE_RUN_DIR CADRE_AGENT_ADDR 2>/dev/null

# No allocation at all.
"$agent" launch --from-env -- true 2>"$work/err"; rc=$?
[ $rc = 1 ] && grep -q 'no Slurm or PBS allocation' "$work/err" ||
    fail "no allocation: status $rc: $(cat "$work/err")"
"$agent" launch --from-env --nodes node1 -- true 2>"$work/err"; rc=$?
[ $rc = 2 ] && grep -q 'no --nodes or --nodefile' "$work/err" ||
    fail "--from-env with --nodes: status $rc: $(cat "$work/err")"
ok "no allocation: exit 1 naming the variables; --from-env with --nodes refused"

# PBS: two hosts (FQDNs), two slots each; no --run-dir: ./cadre-run.JOBID.
printf 'node1.cluster\nnode1.cluster\nnode2.cluster\nnode2.cluster\n' > "$work/nodefile"
mkdir "$work/pbs"
(
	cd "$work/pbs" || exit 1
	# shellcheck disable=SC2086
	PATH=$bin:$PATH PBS_JOBID=77.pbs-server PBS_NODEFILE=$work/nodefile \
	    timeout 120 "$agent" launch --from-env --startup-timeout 30s $mpi \
	    -- "$hello" >"$work/out" 2>"$work/err"
); rc=$?
prd=$work/pbs/cadre-run.77.pbs-server
[ $rc = 0 ] || fail "PBS: status $rc: $(cat "$work/err")"
[ "$(mode "$prd")" = 700 ] && [ -f "$prd/keys/id_ed25519" ] || fail "PBS: run dir or keys missing"
grep -q '"reason": "done"' "$prd/status.json" || fail "PBS: status.json: $(cat "$prd/status.json")"
for r in 0 1 2 3; do
	n=node$((r / 2 + 1))
	grep -qx "\[rank $r $n\] hello from rank $r of 4 on node $n" "$prd/log/rank-$r.log" ||
	    fail "PBS: rank $r: $(cat "$prd/log/rank-$r.log" 2>&1)"
done
[ "$(grep -c '^pbsdsh -n' "$FAKE_LOG")" = 2 ] && grep -q '^pbsdsh -n 0 -- .* node-serve --run-dir .* --node node1$' "$FAKE_LOG" &&
    grep -q '^pbsdsh -n 2 -- .* --node node2$' "$FAKE_LOG" || fail "PBS: pbsdsh calls: $(cat "$FAKE_LOG")"
grep -q 'agents publish' "$work/err" && fail "PBS: nodeaddrs written"
ok "PBS (fake pbsdsh): 2 hosts x 2 slots from PBS_NODEFILE, one pbsdsh -n per host, 4 ranks on the right nodes, run dir ./cadre-run.\$PBS_JOBID with keys"

# The agents went away with the run: no node-serve/serve left of that dir.
if pgrep -f "serve --run-dir $prd" >/dev/null 2>&1; then
	fail "PBS: agents still running: $(pgrep -af "serve --run-dir $prd")"
fi
ok "PBS: the agents stopped after the run"

# The scheduler's signals: USR1 reaches every rank (checkpoint), TERM
# stops them (preempted), and the agents still go away.
: > "$FAKE_LOG"
rm -rf "$prd"
(
	cd "$work/pbs" || exit 1
	# shellcheck disable=SC2086
	PATH=$bin:$PATH PBS_JOBID=77.pbs-server PBS_NODEFILE=$work/nodefile \
	    exec "$agent" launch --from-env --startup-timeout 30s $mpi \
	    -- "$hello" --signals >"$work/out" 2>"$work/err"
) &
lp=$!
pids="$pids $lp"
count_is() { [ "$(grep -c "$2" "$3")" = "$1" ]; }
wait_for 60 count_is 4 'ready$' "$work/out" || fail "signals: ranks not ready: $(cat "$work/out" "$work/err")"
kill -USR1 $lp
wait_for 30 count_is 4 'got SIGUSR1$' "$work/out" || fail "SIGUSR1 did not reach 4 ranks: $(cat "$work/out")"
kill -TERM $lp
wait_exit 60 $lp; rc=$?
[ "$rc" = 5 ] && grep -q '"reason": "preempted"' "$prd/status.json" ||
    fail "SIGTERM: status $rc: $(cat "$work/err")"
[ "$(grep -c 'got SIGTERM$' "$work/out")" = 4 ] || fail "SIGTERM did not reach 4 ranks: $(cat "$work/out")"
if pgrep -f "serve --run-dir $prd" >/dev/null 2>&1; then
	fail "agents left after SIGTERM: $(pgrep -af "serve --run-dir $prd")"
fi
ok "PBS: SIGUSR1 to launch --from-env reaches every rank, SIGTERM stops them (preempted, 5), agents gone"

# Slurm: 2 nodes, SLURM_TASKS_PER_NODE 2(x2), NodeAddr from (fake)
# scontrol, agents from (fake) srun; --run-dir given.
: > "$FAKE_LOG"
# shellcheck disable=SC2086
PATH=$bin:$PATH SLURM_JOB_ID=4242 SLURM_JOB_NODELIST='node[1-2]' \
    SLURM_TASKS_PER_NODE='2(x2)' timeout 120 "$agent" launch --from-env \
    --run-dir "$work/srd" --startup-timeout 30s $mpi -- "$hello" \
    >"$work/out" 2>"$work/err"; rc=$?
[ $rc = 0 ] || fail "Slurm: status $rc: $(cat "$work/err") $(cat "$FAKE_LOG")"
grep -q '"reason": "done"' "$work/srd/status.json" || fail "Slurm: status.json"
for r in 0 1 2 3; do
	n=node$((r / 2 + 1))
	grep -qx "\[rank $r $n\] hello from rank $r of 4 on node $n" "$work/srd/log/rank-$r.log" ||
	    fail "Slurm: rank $r: $(cat "$work/srd/log/rank-$r.log" 2>&1)"
done
grep -q '^srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=0 --whole --cpu-bind=none .*cadre-agent node-serve --run-dir ' "$FAKE_LOG" ||
    fail "Slurm: srun call: $(cat "$FAKE_LOG")"
grep -q '^scontrol show node -o node\[1-2\]$' "$FAKE_LOG" || fail "Slurm: scontrol call: $(cat "$FAKE_LOG")"
[ "$(cat "$work/srd/nodeaddrs")" = "node1 127.0.1.1
node2 127.0.1.2" ] || fail "Slurm: nodeaddrs: $(cat "$work/srd/nodeaddrs")"
grep -q '"addr": "127.0.1.2"' "$work/srd/agents/node2.json" 2>/dev/null ||
    grep -q '127.0.1.2 slots=2' "$work/srd/hostfile" || fail "Slurm: node2 not on 127.0.1.2: $(cat "$work/srd/hostfile")"
ok "Slurm (fake srun, scontrol): 2 nodes x 2 slots from SLURM_TASKS_PER_NODE, agents on NodeAddr, 4 ranks"

# SLURM_NTASKS_PER_NODE wins over SLURM_TASKS_PER_NODE; --slots over both.
rm -rf "$work/srd"
# shellcheck disable=SC2086
PATH=$bin:$PATH SLURM_JOB_ID=4243 SLURM_JOB_NODELIST='node[1-2]' \
    SLURM_TASKS_PER_NODE='2(x2)' SLURM_NTASKS_PER_NODE=2 timeout 120 "$agent" launch --from-env \
    --slots 1 --run-dir "$work/srd" --startup-timeout 30s $mpi -- "$hello" \
    >"$work/out" 2>"$work/err"; rc=$?
[ $rc = 0 ] && [ "$(wc -l < "$work/srd/nodefile")" = 2 ] ||
    fail "--slots 1: status $rc, nodefile $(cat "$work/srd/nodefile" 2>&1): $(cat "$work/err")"
ok "--slots overrides the allocation's counts"

# Malformed counts are refused before anything starts.
: > "$FAKE_LOG"
for bad in '2(x3)' '2(x1' 'x' '0(x2)' '1,1,1' '2(y2)'; do
	PATH=$bin:$PATH SLURM_JOB_ID=1 SLURM_JOB_NODELIST='node[1-2]' \
	    SLURM_TASKS_PER_NODE=$bad "$agent" launch --from-env \
	    --run-dir "$work/bad" -- true 2>"$work/err"; rc=$?
	[ $rc = 1 ] && grep -q 'SLURM_TASKS_PER_NODE=.*pass --slots' "$work/err" ||
	    fail "SLURM_TASKS_PER_NODE=$bad: status $rc: $(cat "$work/err")"
done
PATH=$bin:$PATH SLURM_JOB_ID=1 SLURM_JOB_NODELIST='node[1-' "$agent" launch --from-env \
    --run-dir "$work/bad" -- true 2>"$work/err"; rc=$?
[ $rc = 1 ] && grep -q 'SLURM_JOB_NODELIST=node\[1-: ' "$work/err" || fail "bad nodelist: status $rc: $(cat "$work/err")"
[ -s "$FAKE_LOG" ] && fail "srun started for a bad allocation: $(cat "$FAKE_LOG")"
ok "malformed SLURM_TASKS_PER_NODE or SLURM_JOB_NODELIST: exit 1 with the fix, nothing started"
exit 0
