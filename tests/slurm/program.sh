#!/bin/sh
# A user's program (docs/program.md) on the private Slurm (tests/slurm/):
# the example etc/examples/torchrun-ddp/train.py (a tiny BERT, DDP over
# gloo) under torchrun, launch per_node, 2 nodes x 1 rank:
#   1. cadred runs it to done: both ranks end with the same weights,
#      rank 0 on node1 and rank 1 on node2, steps 1..N in metrics.jsonl,
#      and `cadre report --format json` has a samples_per_s_median;
#   2. the time limit: Slurm's SIGUSR1 (sbatch --signal=B:USR1@grace)
#      comes while the first attempt trains (slow steps on attempt 1
#      only); it checkpoints and ends preempted, the run is requeued
#      (retries.on has preempted by default) and the second attempt
#      resumes from that checkpoint: steps 1..N once each, done, the
#      weights of case 1;
#   3. wrapper mode: a hand-written sbatch script, `cadre-agent launch
#      --from-env --per-node -- torchrun ... {rdzv_endpoint}`, submitted
#      with `sbatch --wait`: done, the weights of case 1, cadre's start
#      event and the program's step lines in metrics.jsonl.
# One Slurm for the three: case 1 gets node1-2, case 2 node3-4 alongside
# it, case 3 node1-2 again while case 2 waits for its signal. torchrun is
# `python3 -m torch.distributed.run`, with the Python that has torch.
# Skipped (77) without torch, transformers or mpirun.
agent=${top_builddir:?}/cadre-agent
[ -x "$agent" ] || { echo "program: SKIP: $agent not built"; exit 77; }
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
command -v mpirun >/dev/null 2>&1 || skip "no mpirun"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
"$py" -c 'import transformers' 2>/dev/null || skip "no transformers"
train=$top_srcdir/etc/examples/torchrun-ddp/train.py
check_metrics=$top_srcdir/tests/program/metrics_check.py
# the real agent; a program needs no trainer
sed -i -e "s|^agent = .*|agent = $agent|" -e 's/^cmd_timeout = .*/cmd_timeout = 10/' \
    -e 's/^poll_interval = .*/poll_interval = 0.5/' "$conf"
extra_cleanup='cadred_stop KILL'
cadred_start

# Steps of every case: more than attempt 1 of case 2 can do, 2 s each,
# before its signal (below); a few seconds without the sleep.
STEPS=120
torchrun="$py -m torch.distributed.run --nnodes {nnodes}
    --nproc_per_node {nproc_per_node} --rdzv_backend c10d
    --rdzv_endpoint {rdzv_endpoint} --redirects 1 --tee 1
    $train --steps $STEPS --weights-out {run_dir}/weights"
# spec NAME TIME_LIMIT GRACE COMMAND: $work/NAME.yaml, COMMAND the YAML
# of program.command
spec() {
	cat > "$work/$1.yaml" <<SPEC
version: 1
name: $1
scheduler: { backend: slurm, time_limit: $2, signal_grace: $3 }
resources: { nodes: 2, ranks_per_node: 1, cpus_per_rank: 1 }
agent: { startup_timeout: 60s }
program:
  command: $4
  launch: per_node
  workdir: $work
  env: { OMP_NUM_THREADS: "1", GLOO_SOCKET_IFNAME: lo }
measure: { skip_steps: 5 }
retries: { backoff: 0s }
SPEC
}
submit() { cadre submit "$work/$1.yaml" > /dev/null 2>>"$work/d/cadred.log"; }
# state_in RUN STATE...: the run is in one of the states
state_in() {
	_s=$(run_field "$1" state)
	shift
	case " $* " in *" $_s "*) ;; *) false ;; esac
}

# weights CASE DIR: 2 ranks wrote the same weights in DIR/weights, the
# same as case 1's ($ref).
ref=
weights() {
	_n=$(ls "$2"/weights/weights-rank-*.sha256 2>/dev/null | wc -l)
	_u=$(sort -u "$2"/weights/weights-rank-*.sha256 2>/dev/null)
	[ -z "$ref" ] && [ "$_n" = 2 ] && ref=$_u
	if [ "$_n" = 2 ] && [ "$_u" = "$ref" ]; then
		pass "$1: 2 ranks, the same weights${3:+ $3}"
	else
		fail "$1: $_n weight files: $(echo $_u) (case 1: $ref)"
	fi
}
# metrics CASE DIR: DIR/metrics.jsonl has steps 1..$STEPS once each
metrics() {
	if _ck=$("$py" "$check_metrics" "$2/metrics.jsonl" $STEPS 2> "$work/mc.err"); then
		pass "$1: metrics.jsonl: steps 1..$STEPS once each${_ck:+, checkpoint at $_ck}"
	else
		fail "$1: $(head -n 5 "$work/mc.err")"
	fi
}
# ended CASE RUN SECONDS: the run ends done within SECONDS
ended() {
	if wait_until "$3" state_in "$2" done failed cancelled &&
	    run_is "$2" done; then
		pass "$1: run $2 done after $(run_field "$2" attempts) attempt(s)"
	else
		fail "$1: run $2 $(run_field "$2" state) $(run_field "$2" reason): $(tail -n 20 "$CADRE_STATE_DIR/runs/$2/job.out" 2>&1)"
		return 1
	fi
}

# ---- 1. to done; started first, so that it gets node1 and node2
# the command as a list of words (no shell), each quoted for YAML
spec ddp 5m 30s "[$(echo $torchrun | sed "s/[^ ]*/'&'/g; s/ /, /g")]"
submit ddp
run1=$(run_ids "$work/ddp.yaml")
dir1=$CADRE_STATE_DIR/runs/$run1
wait_until 60 state_in "$run1" running done failed ||
    fail "ddp: run $run1 not started in 60 s: $(run_field "$run1" state)"

# ---- 2. the time limit, submitted now (node3 and node4)
# 3 minutes with a 60 s grace: SIGUSR1 120 s into the job, or earlier:
# "up to 60 seconds" says sbatch(1), and slurmctld, which looks at time
# limits every 30 s, sends it at the first look within 30 s of the mark
# (here: 3 to 11 s early). That is after attempt 1's start-up (10-35 s
# here with the other cases starting beside it), while it trains
# ($STEPS steps of at least 2 s), with 60 s left to checkpoint and exit
# 75 before the limit. Attempt 2's steps are not slowed: it ends long
# before its own signal. The command is a string (sh -c, each {name}
# one shell word).
spec preempt 3m 60s ">-
    exec $torchrun --step-sleep \$( [ \"\$CADRE_ATTEMPT\" = 1 ] && echo 2 || echo 0 )"
submit preempt
run2=$(run_ids "$work/preempt.yaml")
dir2=$CADRE_STATE_DIR/runs/$run2

# ---- 1. checks
if ended ddp "$run1" 180; then
	weights ddp "$dir1"
	metrics ddp "$dir1"
	grep -q '"node1"' "$dir1/log/rank-0.json" 2>/dev/null &&
	    grep -q '"node2"' "$dir1/log/rank-1.json" 2>/dev/null &&
	    pass "ddp: rank 0 (node 0's torchrun) on node1, rank 1 on node2" ||
	    fail "ddp: ranks/nodes: $(cat "$dir1"/log/rank-*.json 2>&1)"
	cadre report ddp --format json > "$work/ddp.json" 2> "$work/ddp.rerr"
	check "ddp: cadre report --format json has a samples_per_s_median" \
	    "$("$py" -c 'import json,sys; c=json.load(open(sys.argv[1]))["configurations"]; print(len(c), all(x.get("samples_per_s_median", 0) > 0 for x in c))' "$work/ddp.json" 2>&1) $(cat "$work/ddp.rerr")" \
	    "1 True "
fi

# ---- 3. wrapper mode, while case 2 trains
run3=$work/run3
cat > "$work/user.sh" <<SCRIPT
#!/bin/sh
#SBATCH --nodes=2
exec $agent launch --from-env --run-dir $run3 --per-node -- $(echo $torchrun)
SCRIPT
# what sbatch passes on to the job (--export=ALL): every node is a
# loopback address here
OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo TMPDIR=$work
OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo
export OMP_NUM_THREADS GLOO_SOCKET_IFNAME TMPDIR OMPI_MCA_oob_tcp_if_include \
    OMPI_MCA_btl OMPI_MCA_btl_tcp_if_include
(cd "$work" && timeout 180 sbatch --wait --output="$work/user.out" "$work/user.sh") \
    > "$work/sbatch3" 2>&1; rc=$?
if [ $rc = 0 ] && grep -q '"reason": "done"' "$run3/status.json" 2>/dev/null; then
	pass "wrapper: sbatch --wait of a 3-line script: done ($(cat "$work/sbatch3"))"
else
	fail "wrapper: sbatch status $rc: $(cat "$work/sbatch3"); job output: $(tail -n 30 "$work/user.out" 2>&1); status.json: $(cat "$run3/status.json" 2>&1)"
fi
weights wrapper "$run3" "as case 1"
grep -q '"event":"start".*"by_cadre":true' "$run3/metrics.jsonl" 2>/dev/null &&
    pass "wrapper: cadre's start event in metrics.jsonl" ||
    fail "wrapper: no start event: $(head -n 2 "$run3/metrics.jsonl" 2>&1)"
metrics wrapper "$run3"

# ---- 2. checks
if ended preempt "$run2" 300; then
	check "preempt: the first attempt ended preempted" \
	    "$(sed -n 's/.*"reason": *"\([a-z_]*\)".*/\1/p' "$dir2/status.1.json" 2>/dev/null | head -n 1)" preempted
	# stopped by the grace's SIGUSR1 (60-120 s into the job), not by
	# the limit's SIGTERM (180 s): attempt 1's summary, cadre's clock
	# since the program started
	el=$(grep '"event":"summary".*"attempt":1,' "$dir2/metrics.jsonl" |
	    sed -n 's/.*"elapsed_s":\([0-9]*\).*/\1/p')
	# its start-up: that less the training time of its last step line
	trained=$(awk '/"event":"start"/ { n++ } n == 1 && /"event":"step"/' "$dir2/metrics.jsonl" |
	    tail -n 1 | sed -n 's/.*"elapsed_s":\([0-9]*\).*/\1/p')
	[ -n "$el" ] && [ "$el" -lt 150 ] &&
	    pass "preempt: attempt 1 stopped $el s into the program (start-up about $((el - ${trained:-0})) s), before the time limit" ||
	    fail "preempt: attempt 1's summary: $(grep '"event":"summary"' "$dir2/metrics.jsonl" | head -n 1)"
	ck=$(grep '"event":"checkpoint"' "$dir2/metrics.jsonl" | head -n 1 |
	    sed -n 's/.*"step":\([0-9]*\).*/\1/p')
	check "preempt: 2 starts, the second resumed from the checkpoint of step ${ck:-none}" \
	    "$(grep -c '"event":"start".*"by_cadre":true' "$dir2/metrics.jsonl") $(grep '"event":"start".*"attempt":2' "$dir2/metrics.jsonl" |
	    grep -c "\"resumed_from\":\"$dir2/checkpoints/step-${ck:-none}\"")" "2 1"
	first=$(awk '/"event":"start"/ { n++ } n == 2 && /"event":"step"/' "$dir2/metrics.jsonl" |
	    head -n 1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p')
	check "preempt: attempt 2 goes on at the step after the checkpoint" \
	    "${first:-none}" "$((${ck:-0} + 1))"
	metrics preempt "$dir2"
	weights preempt "$dir2" "as case 1"
fi
exit $failed
