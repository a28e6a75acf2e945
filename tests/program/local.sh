#!/bin/sh
# User programs end
# to end with `cadre run` on the local backend (virtual nodes 127.0.3.N
# on this machine), the example program etc/examples/torchrun-ddp/
# train.py (a tiny BERT, DDP over gloo) and tests/program/print_steps.py:
#   1. launch per_node, torchrun: 1 node x 2 ranks and 2 nodes x 1;
#   2. launch per_rank, python3 itself: the same two layouts;
#   3. launch once, mpirun over the hostfile: 2 nodes x 1;
#   4. launch once, a shell command that ssh-es to the second node;
#   5. per_node torchrun stopped by the time limit (SIGUSR1 signal_grace
#      before it, with the stop file), requeued, resumed, done;
#   6. print_steps.py's printed lines through program.metrics.regex.
# Every rank of 1-3 and 5 ends with the same weights, and every run too
# (same global batch and seed, one thread per rank); each configuration
# has a samples_per_s_median in `cadre report --format json`.
#
# What this assumes of cadre (the program contract, docs/program.md):
# - the spec's program section: command (a list of words, or a string
#   for sh -c), launch per_rank|per_node|once, workdir, env, vars,
#   signal, checkpoint_every, keep_checkpoints, metrics.regex; {name}s
#   are replaced inside words too ("{run_dir}/weights");
# - per_rank: one process per rank with RANK, WORLD_SIZE, LOCAL_RANK,
#   LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK, MASTER_ADDR, MASTER_PORT;
#   per_node: one per node with CADRE_NNODES, CADRE_NPROC_PER_NODE,
#   CADRE_NODE_RANK, CADRE_RDZV_ENDPOINT, MASTER_ADDR, MASTER_PORT; once:
#   one on the first node with CADRE_HOSTFILE ("ADDR slots=N" lines),
#   where `ssh ADDR CMD` (mpirun's too) runs CMD on that node through
#   its agent and exits with CMD's status;
# - every process: CADRE_RUN_ID, CADRE_EXPERIMENT, CADRE_CONFIG_ID,
#   CADRE_RUN_DIR, CADRE_ATTEMPT, CADRE_CHECKPOINT_DIR, CADRE_RESUME_FROM
#   (the newest checkpoint event's path on a later attempt),
#   CADRE_METRICS (RUN_DIR/metrics.jsonl), CADRE_DEADLINE,
#   CADRE_STOP_FILE;
# - the signal goes to every rank, not to torchrun (whose default action
#   for SIGUSR1 is to die), before the time limit with the stop file
#   made first; a rank's exit 75 after the stop file is a preemption
#   (requeued, resumable) also under torchrun, which exits 1 when a
#   worker exits 75;
# - `cadre report` takes samples_per_s from the program's "step" lines,
#   and from the named groups of metrics.regex.
# Skipped (77) without torch, transformers or mpirun.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
. "$top_srcdir/tests/lib.sh"
[ -z "${CADRE_DISTCHECK_FAST:-}" ] ||
    skip "three minutes of PyTorch runs that make check ran (CADRE_DISTCHECK_FAST)"
for p in cadre cadre-agent; do
	[ -x "$top_builddir/$p" ] || skip "$p not built"
done
command -v mpirun >/dev/null 2>&1 || skip "no mpirun"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
"$py" -c 'import transformers' 2>/dev/null || skip "no transformers"
train=$top_srcdir/etc/examples/torchrun-ddp/train.py
print_steps=$top_srcdir/tests/program/print_steps.py
check_metrics=$top_srcdir/tests/program/metrics_check.py
# Open MPI's allocations outlive MPI_Finalize: no leak check in the ranks.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
CADRE_STATE_DIR=$work/state CADRE_RUNTIME_DIR=$work/rt
TMPDIR=$work	# the jobs' Open MPI directories
export ASAN_OPTIONS CADRE_STATE_DIR CADRE_RUNTIME_DIR TMPDIR
cadre() { "$top_builddir/cadre" "$@"; }
root=
[ "$(id -u)" = 0 ] && root='--allow-run-as-root, '

STEPS=30
# 2 ranks per run, as 1 node x 2 and 2 nodes x 1
layouts='matrix:
  resources.nodes: [1, 2]
  resources.ranks_per_node: [1, 2]
exclude:
  - { resources.nodes: 1, resources.ranks_per_node: 1 }
  - { resources.nodes: 2, resources.ranks_per_node: 2 }'
# spec NAME PROGRAM [RESOURCES]: $work/NAME.yaml; PROGRAM is the program
# section's body (2-space indent); RESOURCES replaces $layouts.
spec() {
	cat > "$work/$1.yaml" <<SPEC
version: 1
name: $1
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
program:
  workdir: $work
  vars: { steps: $STEPS }
  env: { OMP_NUM_THREADS: "1", GLOO_SOCKET_IFNAME: lo }
  signal: SIGUSR1
$2
measure: { skip_steps: 5 }
retries: { backoff: 1s }
${3:-$layouts}
SPEC
}

# run NAME: `cadre run` of $work/NAME.yaml; 1 when it did not end done.
run() {
	cadre run "$work/$1.yaml" > "$work/$1.out" 2> "$work/$1.err"
	_rc=$?
	if [ $_rc = 0 ]; then
		pass "$1: cadre run: done"
	else
		fail "$1: cadre run: exit $_rc: $(tail -n 5 "$work/$1.err")"
		for _r in $(runs "$1"); do
			echo "  run $_r: $(tail -n 5 "$CADRE_STATE_DIR/runs/$_r/job.out" 2>&1)"
		done
		return 1
	fi
}
# runs NAME: the run ids of $work/NAME.yaml
runs() {
	cadre plan --json "$work/$1.yaml" | sed -n 's/^ *"id": "\([0-9a-f]*\)",*$/\1/p'
}

# weights NAME: in every run of NAME, 2 ranks wrote the same weights, the
# same as every earlier run's ($ref).
ref=
weights() {
	for _r in $(runs "$1"); do
		_w=$CADRE_STATE_DIR/runs/$_r/weights
		_n=$(ls "$_w"/weights-rank-*.sha256 2>/dev/null | wc -l)
		_u=$(sort -u "$_w"/weights-rank-*.sha256 2>/dev/null)
		[ -z "$ref" ] && [ "$_n" = 2 ] && ref=$_u
		if [ "$_n" = 2 ] && [ "$_u" = "$ref" ]; then
			pass "$1: run $_r: 2 ranks, the same weights as every run"
		else
			fail "$1: run $_r: $_n weight files: $(echo $_u) (reference $ref)"
		fi
	done
}

# metrics NAME: every run's metrics.jsonl has steps 1..$STEPS, once each.
metrics() {
	for _r in $(runs "$1"); do
		if "$py" "$check_metrics" "$CADRE_STATE_DIR/runs/$_r/metrics.jsonl" $STEPS \
		    > "$work/cks" 2> "$work/mc.err"; then
			pass "$1: run $_r: metrics.jsonl, steps 1..$STEPS$( [ -s "$work/cks" ] && echo ", checkpoints at $(cat "$work/cks")")"
		else
			fail "$1: run $_r: $(head -n 3 "$work/mc.err")"
		fi
	done
}

# report NAME CONFIGS: `cadre report --format json` has CONFIGS
# configurations, each with a samples_per_s_median.
report() {
	cadre report "$1" --format json > "$work/$1.json" 2> "$work/$1.rerr" ||
	    { fail "$1: cadre report: $(cat "$work/$1.rerr")"; return; }
	"$py" - "$work/$1.json" "$2" <<'PY' && pass "$1: the report has samples_per_s_median for each of $2 configurations" ||
import json, sys
r = json.load(open(sys.argv[1]))
c = r["configurations"]
ok = len(c) == int(sys.argv[2]) and all(
    isinstance(x.get("samples_per_s_median"), (int, float)) and x["samples_per_s_median"] > 0
    for x in c)
if not ok:
    print([(x.get("config_id"), x.get("samples_per_s_median")) for x in c], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
	fail "$1: the report lacks samples_per_s_median"
}

# ---------------------------------------------------------------- per_node
spec torchrun "  command: [$py, -m, torch.distributed.run, --nnodes, '{nnodes}',
            --nproc_per_node, '{nproc_per_node}', --rdzv_backend, c10d,
            --rdzv_endpoint, '{rdzv_endpoint}', --redirects, '1', --tee, '1',
            $train, --steps, '{steps}', --weights-out, '{run_dir}/weights']
  launch: per_node"
if run torchrun; then
	weights torchrun
	metrics torchrun
	report torchrun 2
fi

# ---------------------------------------------------------------- per_rank
spec perrank "  command: [$py, $train, --steps, '{steps}', --weights-out, '{run_dir}/weights']
  launch: per_rank"
if run perrank; then
	weights perrank
	metrics perrank
	report perrank 2
fi

# ---------------------------------------------------------------- once: mpirun
spec mpirun "  command: [mpirun, $root--hostfile, '{hostfile}', -np, '{ranks}',
            -x, MASTER_ADDR, -x, MASTER_PORT, -x, OMP_NUM_THREADS, -x, GLOO_SOCKET_IFNAME,
            -x, CADRE_RESUME_FROM, -x, CADRE_METRICS, -x, CADRE_CHECKPOINT_DIR,
            -x, CADRE_STOP_FILE,
            $py, $train, --steps, '{steps}', --weights-out, '{run_dir}/weights']
  launch: once" "resources: { nodes: 2, ranks_per_node: 1 }"
if run mpirun; then
	weights mpirun
	metrics mpirun
	report mpirun 1
fi

# ---------------------------------------------------------------- once: ssh
# The second node's address from the hostfile; what ssh ran there, and
# its exit status, come back.
cat > "$work/ssh.yaml" <<'SPEC'
version: 1
name: ssh
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
resources: { nodes: 2 }
program:
  command: >-
    h=$(sed -n 2p "$CADRE_HOSTFILE" | cut -d' ' -f1);
    ssh "$h" 'echo reached $(hostname)' > "$CADRE_RUN_DIR/ssh.out" &&
    { ssh "$h" 'exit 3'; echo "status $?" >> "$CADRE_RUN_DIR/ssh.out"; }
  launch: once
retries: { max: 0 }
SPEC
if run ssh; then
	r=$(runs ssh)
	out=$CADRE_STATE_DIR/runs/$r/ssh.out
	check "ssh from a once program to the second node" \
	    "$(cat "$out" 2>&1)" "reached $(hostname)
status 3"
fi

# ---------------------------------------------------------------- preempted
# 1 node x 2 under torchrun, slow steps (1 s): the time limit's SIGUSR1
# (2m limit, 90s grace: at 30 s) with the stop file: a checkpoint, exit 75,
# requeued, resumed from it, done; the same weights as the runs above.
# The command is a string (sh -c, the contract's variables instead of
# {name}s): the second attempt's steps are not slowed, so that it ends
# well before its own 30 s.
spec preempt "  command: >-
    exec $py -m torch.distributed.run --nnodes \$CADRE_NNODES
    --nproc_per_node \$CADRE_NPROC_PER_NODE --rdzv_backend c10d
    --rdzv_endpoint \$CADRE_RDZV_ENDPOINT --redirects 1 --tee 1
    $train --steps $STEPS --weights-out \$CADRE_RUN_DIR/weights
    --step-sleep \$( [ \"\$CADRE_ATTEMPT\" = 1 ] && echo 1 || echo 0 )
  launch: per_node
  checkpoint_every: 0s" "resources: { nodes: 1, ranks_per_node: 2 }"
sed -i 's/time_limit: 5m/time_limit: 2m, signal_grace: 90s/' "$work/preempt.yaml"
if run preempt; then
	r=$(runs preempt)
	rd=$CADRE_STATE_DIR/runs/$r
	grep -q '"event":"checkpoint"' "$rd/metrics.jsonl" ||
	    fail "preempt: no checkpoint event"
	check "preempt: two attempts, the second resumed from a checkpoint" \
	    "$(grep -c '"event":"start".*"by_cadre":true' "$rd/metrics.jsonl") $(grep '"event":"start".*"attempt":2' "$rd/metrics.jsonl" | grep -c '"resumed_from":"[^"]*checkpoints/step-')" "2 1"
	check "preempt: the first attempt ended preempted" \
	    "$(grep -c '"reason": "preempted"' "$rd"/status.*.json 2>/dev/null | awk -F: '{ s += $NF } END { print s }')" 1
	weights preempt
	metrics preempt
	# both attempts' step lines, each step once: steps 1..30 measured
	# once each (30 - skip_steps 5 lines of samples/s)
	cadre report preempt --format json > "$work/preempt.json" 2>/dev/null
	check "preempt: the report counts both attempts' steps once" \
	    "$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1]))["runs"]; print(len(c), c[0]["state"], c[0]["attempts"], c[0]["measured_steps"])' "$work/preempt.json" 2>&1)" \
	    "1 done 2 25"
fi

# ---------------------------------------------------------------- timed
# checkpoint_every 5s: requests at each 5 s of program time once the
# program trains; their checkpoint lines carry due_s, and report --at
# lists the configuration at 10 s.
spec timed "  command: [$py, $train, --steps, '60', --step-sleep, '0.25']
  launch: per_rank
  checkpoint_every: 5s
  keep_checkpoints: 2" "resources: { nodes: 1, ranks_per_node: 1 }"
if run timed; then
	r=$(runs timed)
	rd=$CADRE_STATE_DIR/runs/$r
	dues=$(sed -n 's/.*"due_s":\([0-9.]*\).*/\1/p' "$rd/metrics.jsonl" | tr '\n' ' ')
	"$py" - "$dues" <<'PY' && pass "timed: checkpoint marks at 5 s multiples: $dues" || fail "timed: marks '$dues'"
import sys
d = [float(x) for x in sys.argv[1].split()]
sys.exit(0 if len(d) >= 2 and all(abs(x / 5 - round(x / 5)) < 1e-9 for x in d) and d == sorted(set(d)) else 1)
PY
	check "timed: keep_checkpoints 2 pruned the older ones" \
	    "$(ls -d "$rd"/checkpoints/step-* 2>/dev/null | wc -l)" 2
	at=$(echo "$dues" | awk '{ print int($1) }')
	cadre report timed --at "${at}s" --format json > "$work/at.json" 2> "$work/at.err"
	check "timed: report --at ${at}s lists the configuration's checkpoint" \
	    "$("$py" -c 'import json,sys; a=json.load(open(sys.argv[1]))["at"]; print(sum(c["runs_at"] for t in a for c in t["configs"]))' "$work/at.json" 2>&1)" 1
fi

# ---------------------------------------------------------------- bad runs
# A command that is not there: the run fails with exit 127 and "command
# not found" in its reason. A program writing malformed metrics lines: a
# warning per line in the report, the run still counted. One writing
# 10 GB without a newline: the logs are capped and nothing hangs.
cat > "$work/bad.yaml" <<SPEC
version: 1
name: bad
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
program:
  command: [sh, -c, "{what}"]
  launch: per_rank
  vars: { what: x }
retries: { max: 0 }
include:
  - { program.vars.what: "exec /nonexistent/train" }
  - { program.vars.what: "for i in 1 2 3 4 5 6; do echo '{\"event\":\"step\",\"step\":'\$i',\"loss\":1,\"elapsed_s\":'\$i',\"samples_per_s\":100}' >> \$CADRE_METRICS; done; echo 'not json' >> \$CADRE_METRICS; echo '{\"event\":\"step\",\"step\":\"x\"}' >> \$CADRE_METRICS" }
  - { program.vars.what: "head -c 10G /dev/zero | tr '\\\\0' x; echo; echo done" }
SPEC
cadre run "$work/bad.yaml" > "$work/bad.out" 2> "$work/bad.err"
for r in $(runs bad); do
	st=$CADRE_STATE_DIR/runs/$r/status.json
	case "$(cat "$CADRE_STATE_DIR/runs/$r/program.json")" in
	*nonexistent*)
		grep -q '"reason": "failed"' "$st" && grep -q 'status 127 (command not found)' "$st" &&
		    pass "bad: a missing command fails with exit 127, command not found" ||
		    fail "bad: missing command: $(cat "$st" 2>&1 | head -30)" ;;
	*CADRE_METRICS*)
		grep -q '"reason": "done"' "$st" && pass "bad: malformed metrics lines: the run is done" ||
		    fail "bad: malformed metrics: $(cat "$st" 2>&1 | head)" ;;
	*10G*)
		log=$CADRE_STATE_DIR/runs/$r/log/rank-0.log
		sz=$(stat -c %s "$log" 2>/dev/null || echo 0)
		grep -q '"reason": "done"' "$st" && [ "$sz" -le $((256 * 1024 * 1024 + 70000)) ] &&
		    grep -q 'dropped (CADRE_LOG_MAX)' "$log" &&
		    pass "bad: 10 GB of output: done, the log capped at $sz bytes" ||
		    fail "bad: 10 GB of output: log $sz bytes: $(cat "$st" 2>&1 | head)" ;;
	esac
done
# setup: once per node before the program; the first failure ends the
# run failed, naming the node, the command and its status.
cat > "$work/setup.yaml" <<'SPEC'
version: 1
name: setup
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
resources: { nodes: 2 }
program:
  command: [touch, "{run_dir}/program-ran"]
  launch: per_node
  setup: ["echo set up > \"$CADRE_RUN_DIR/setup.$CADRE_NODE_RANK\"", "test -e /nonexistent-data"]
retries: { max: 0 }
SPEC
cadre run "$work/setup.yaml" > "$work/setup.out" 2> "$work/setup.err"
r=$(runs setup)
rd=$CADRE_STATE_DIR/runs/$r
[ -f "$rd/setup.0" ] && [ -f "$rd/setup.1" ] && [ ! -e "$rd/program-ran" ] &&
    grep -q '"reason": "failed"' "$rd/status.json" &&
    grep -q "setup on node[12]: 'test -e /nonexistent-data' exited with status 1" "$rd/status.json" &&
    pass "setup: ran on both nodes; its failure ends the run failed with the command" ||
    fail "setup: $(ls "$rd"; cat "$rd/status.json" 2>&1 | head -20)"

# stage: a program's stage.from copied to stage.to on every node first
mkdir -p "$work/data/sub" && echo shard > "$work/data/sub/a.txt"
cat > "$work/stage.yaml" <<SPEC
version: 1
name: stage
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
resources: { nodes: 2 }
stage: { from: $work/data, to: "$work/staged-%n" }
program:
  command: "cat $work/staged-node\$((CADRE_NODE_RANK + 1))/sub/a.txt > \$CADRE_RUN_DIR/read.\$CADRE_NODE_RANK"
  launch: per_node
retries: { max: 0 }
SPEC
cadre run "$work/stage.yaml" > "$work/stage.out" 2> "$work/stage.err"
r=$(runs stage)
rd=$CADRE_STATE_DIR/runs/$r
check "stage: each node read its staged copy of stage.from" \
    "$(cat "$rd/read.0" "$rd/read.1" 2>&1 | tr '\n' ' ')" "shard shard "

cadre report bad --format json > "$work/bad.json" 2> "$work/bad.rerr"
# lines: cadre's start event, 6 steps, the two bad ones
grep -q 'metrics.jsonl:8:1: warning: skipped: not JSON' "$work/bad.rerr" &&
    grep -q 'metrics.jsonl:9:1: warning: skipped' "$work/bad.rerr" &&
    pass "bad: the report warns about each malformed metrics line" ||
    fail "bad: report warnings: $(cat "$work/bad.rerr")"

# ---------------------------------------------------------------- metrics.regex
# print_steps.py prints "step N loss L samples/s X", and "step x loss"
# now and then, which the regex does not take.
cat > "$work/regex.yaml" <<SPEC
version: 1
name: regex
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
program:
  command: [$py, $print_steps, --steps, "40", --step-sleep, "0.05"]
  launch: once
  metrics:
    regex: '^step (?<step>\d+) loss (?<loss>[0-9.]+) samples/s (?<samples_per_s>[0-9.]+)$'
measure: { skip_steps: 5 }
SPEC
if run regex; then
	r=$(runs regex)
	rd=$CADRE_STATE_DIR/runs/$r
	[ "$(grep -c '"event":"step"' "$rd/metrics.jsonl")" = 40 ] &&
	    pass "regex: 40 step events from the printed lines" ||
	    fail "regex: $(grep -c '"event":"step"' "$rd/metrics.jsonl") step events"
	grep -q '"step":"x"\|"step":null' "$rd/metrics.jsonl" &&
	    fail "regex: the malformed line became an event"
	report regex 1
fi
exit $failed
