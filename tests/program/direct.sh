#!/bin/sh
# The example programs outside cadre, with the program contract's
# variables set by hand (docs/program.md): etc/examples/torchrun-ddp/
# train.py (a tiny BERT, DDP over gloo on CPUs) under torchrun on 1 node
# x 2 and 2 loopback "nodes" x 1, as 2 plain processes with RANK etc.
# (per_rank) and under mpirun (Open MPI's variables): every rank ends
# with the same weights, and every layout with the same weights too (the
# data is a function of the global sample index; one thread per rank).
# SIGUSR1 to one rank: all ranks checkpoint at the same step, go on
# without the stop file, exit 75 with it; the next attempt resumes from
# CADRE_RESUME_FROM and ends bit-identical to the uninterrupted run.
# etc/examples/accelerate/train_accelerate.py under `accelerate launch`
# (1 node x 2 on CPU): stopped and resumed, its losses equal an
# uninterrupted run's. tests/program/print_steps.py: printed steps, a
# malformed line, SIGUSR1, exit 75, resume.
# Skipped (77) without torch or transformers (tests/reference/setup.sh);
# the mpirun and accelerate cases are skipped without them.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/lib.sh"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
"$py" -c 'import transformers' 2>/dev/null || skip "no transformers"
command -v pgrep >/dev/null 2>&1 || skip "no pgrep"
train=$top_srcdir/etc/examples/torchrun-ddp/train.py
acc_train=$top_srcdir/etc/examples/accelerate/train_accelerate.py
check_metrics=$top_srcdir/tests/program/metrics_check.py
# torchrun as the Python that has torch runs it; Debian's torch 1.13 on
# Python 3.11 needs --redirects and --tee other than 0 (to_map fails).
torchrun() { "$py" -m torch.distributed.run --redirects 1 --tee 1 "$@"; }
# one thread per rank: the same sums in every layout, bit for bit
OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo
export OMP_NUM_THREADS GLOO_SOCKET_IFNAME
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT
port=$((20000 + $$ % 20000))
nextport() { port=$((port + 1)); }

# contract DIR: the variables cadre would set, for an attempt in DIR
# (metrics.jsonl, checkpoints/, stop); CADRE_RESUME_FROM stays empty.
contract() {
	mkdir -p "$1/checkpoints"
	CADRE_RUN_DIR=$1 CADRE_METRICS=$1/metrics.jsonl
	CADRE_CHECKPOINT_DIR=$1/checkpoints CADRE_STOP_FILE=$1/stop
	CADRE_RESUME_FROM='' CADRE_ATTEMPT=1 CADRE_RUN_ID=direct-$(basename "$1")
	CADRE_EXPERIMENT=direct CADRE_CONFIG_ID=c0 CADRE_DEADLINE=
	export CADRE_RUN_DIR CADRE_METRICS CADRE_CHECKPOINT_DIR CADRE_STOP_FILE \
	    CADRE_RESUME_FROM CADRE_ATTEMPT CADRE_RUN_ID CADRE_EXPERIMENT \
	    CADRE_CONFIG_ID CADRE_DEADLINE
}

# same_weights WHAT DIR RANKS [REF]: DIR holds RANKS equal hashes (equal
# to REF's when given); the hash is printed.
same_weights() {
	_n=$(ls "$2"/weights-rank-*.sha256 2>/dev/null | wc -l)
	_u=$(sort -u "$2"/weights-rank-*.sha256 2>/dev/null)
	if [ "$_n" != "$3" ] || [ "$(echo "$_u" | wc -l)" != 1 ]; then
		fail "$1: $_n weight files, hashes: $(echo $_u)"
	elif [ -n "${4:-}" ] && [ "$_u" != "$4" ]; then
		fail "$1: weights $_u differ from the reference's $4"
	else
		pass "$1: $3 ranks, equal weights${4:+, equal to the reference}"
	fi
}

# metrics WHAT FILE STEPS: metrics_check.py; the checkpoint steps go to $cks.
metrics() {
	if cks=$("$py" "$check_metrics" "$2" "$3" 2> "$work/mc.err"); then
		pass "$1: metrics.jsonl steps 1..$3${cks:+, checkpoints at $cks}"
	else
		fail "$1: $(head -n 3 "$work/mc.err")"
	fi
}

# A failure the next cases build on: end the test.
fatal() { fail "$*"; exit 1; }

# wait_step FILE N [SECONDS]: until FILE has step N's line.
wait_step() { wait_for "${3:-120}" grep -q "\"step\":$2," "$1"; }

# ---------------------------------------------------------------- torchrun
d=$work/tr1 && contract "$d"
nextport
torchrun --nnodes 1 --nproc_per_node 2 --rdzv_backend c10d \
    --rdzv_endpoint 127.0.0.1:$port "$train" --steps 20 --weights-out "$d/w" \
    > "$d/log" 2>&1 || fail "torchrun 1x2: exit $?: $(tail -n 5 "$d/log")"
same_weights "torchrun, 1 node x 2" "$d/w" 2
ref=$(sort -u "$d"/w/weights-rank-*.sha256 | head -n 1)
metrics "torchrun, 1 node x 2" "$d/metrics.jsonl" 20
[ -z "$cks" ] || fail "checkpoints without a signal: $cks"

d=$work/tr2 && contract "$d"
nextport
for n in 0 1; do
	torchrun --nnodes 2 --node_rank $n --nproc_per_node 1 --rdzv_backend c10d \
	    --rdzv_endpoint 127.0.3.1:$port "$train" --steps 20 \
	    --weights-out "$d/w" > "$d/log$n" 2>&1 &
done
wait
same_weights "torchrun, 2 loopback nodes x 1" "$d/w" 2 "$ref"
metrics "torchrun, 2 nodes x 1" "$d/metrics.jsonl" 20

# ---------------------------------------------------------------- per_rank
# perrank DIR ARGS...: 2 processes with torch's variables set by hand, in
# the background; their pids in $pids.
perrank() {
	_d=$1
	shift
	nextport
	pids=
	for r in 0 1; do
		RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 GROUP_RANK=0 \
		    NODE_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		    "$py" "$train" "$@" > "$_d/rank$r.log" 2>&1 &
		pids="$pids $!"
	done
}
# waitall: $st, the exit statuses of $pids, space separated (not in a
# $(...): a subshell cannot wait for our children).
waitall() {
	st=
	for p in $pids; do
		wait "$p"
		st="${st:+$st }$?"
	done
}

d=$work/pr && contract "$d"
perrank "$d" --steps 20 --weights-out "$d/w"
waitall
check "per_rank without torchrun: exit statuses" "$st" "0 0"
same_weights "per_rank, 2 processes" "$d/w" 2 "$ref"

# ---------------------------------------------------------------- mpirun
if command -v mpirun >/dev/null 2>&1; then
	d=$work/mpi && contract "$d"
	nextport
	root=
	[ "$(id -u)" = 0 ] && root=--allow-run-as-root
	MASTER_ADDR=127.0.0.1 MASTER_PORT=$port mpirun $root -np 2 \
	    -x MASTER_ADDR -x MASTER_PORT -x OMP_NUM_THREADS \
	    "$py" "$train" --steps 20 --weights-out "$d/w" > "$d/log" 2>&1 ||
	    fail "mpirun: exit $?: $(tail -n 5 "$d/log")"
	same_weights "mpirun -np 2 (OMPI_COMM_WORLD_*)" "$d/w" 2 "$ref"
	metrics "mpirun" "$d/metrics.jsonl" 20
else
	echo "SKIP: no mpirun: the Open MPI case"
fi

# ---------------------------------------------------------------- signals
# Slow steps; SIGUSR1 to rank 1 only at step 3, no stop file: every rank
# checkpoints at the same step and goes on. Then the stop file and
# SIGUSR1 to rank 0: a second checkpoint, both exit 75.
d=$work/sig && contract "$d"
perrank "$d" --steps 20 --step-sleep 0.3 --weights-out "$d/w"
set -- $pids
if wait_step "$d/metrics.jsonl" 3; then
	kill -USR1 "$2"
	wait_for 60 grep -q '"event":"checkpoint"' "$d/metrics.jsonl" ||
	    fail "no checkpoint event after SIGUSR1 to rank 1"
	n1=$(sed -n 's/.*"event":"checkpoint","step":\([0-9]*\).*/\1/p' "$d/metrics.jsonl" | tail -n 1)
	wait_step "$d/metrics.jsonl" $((n1 + 2)) 60 ||
	    fail "no steps after the checkpoint without the stop file"
	touch "$d/stop"
	kill -USR1 "$1"
fi
waitall
check "SIGUSR1 with the stop file: both ranks exit 75" "$st" "75 75"
[ -e "$d/w/weights-rank-0.sha256" ] && fail "the stopped run wrote final weights"
n=$(sed -n 's/.*"event":"checkpoint","step":\([0-9]*\).*/\1/p' "$d/metrics.jsonl" | tail -n 1)
if [ "$(grep -c '"event":"checkpoint"' "$d/metrics.jsonl")" = 2 ] &&
    [ -n "$n" ] && [ "$n" -gt "$n1" ] && [ -f "$d/checkpoints/step-$n/state.pt" ]; then
	pass "SIGUSR1 without the stop file: checkpoint at $n1 and on; with it: checkpoint at $n, stop"
else
	fail "checkpoints: $(grep checkpoint "$d/metrics.jsonl"; ls "$d/checkpoints")"
fi
ls "$d/checkpoints" | grep -q tmp && fail "a temporary checkpoint dir is left: $(ls "$d/checkpoints")"

# attempt 2 under torchrun, from the last checkpoint, no sleep
rm -f "$d/stop"
nextport
CADRE_RESUME_FROM=$d/checkpoints/step-$n CADRE_ATTEMPT=2 \
    torchrun --nnodes 1 --nproc_per_node 2 --rdzv_backend c10d \
    --rdzv_endpoint 127.0.0.1:$port "$train" --steps 20 --weights-out "$d/w" \
    > "$d/log2" 2>&1 || fail "resume: exit $?: $(tail -n 5 "$d/log2")"
same_weights "resumed from step $n: bit-identical to the uninterrupted run" "$d/w" 2 "$ref"
metrics "stopped at $n, resumed" "$d/metrics.jsonl" 20

# ---------------------------------------------------------------- accelerate
if "$py" -c 'import accelerate' 2>/dev/null; then
	# --multi_gpu: accelerate's torchrun launch, which on a machine
	# without CUDA gives MULTI_CPU over gloo (--cpu would start one
	# process). Accelerate passes no --redirects to torchrun, so
	# PET_REDIRECTS (torchrun's variable for it) does, for Debian's
	# torch on Python 3.11 (above).
	alaunch="-m accelerate.commands.launch --tee 1 --multi_gpu
	    --mixed_precision no --dynamo_backend no --num_machines 1
	    --machine_rank 0 --num_processes 2 --main_process_ip 127.0.0.1
	    --main_process_port"
	d=$work/acc0 && contract "$d"
	nextport
	PET_REDIRECTS=1 "$py" $alaunch $port "$acc_train" --steps 16 > "$d/log" 2>&1 ||
	    fail "accelerate launch: exit $?: $(tail -n 5 "$d/log")"
	metrics "accelerate launch, 1 node x 2" "$d/metrics.jsonl" 16
	d=$work/acc && contract "$d"
	nextport
	# not in a function: $! must be the launcher, whose children are the ranks
	PET_REDIRECTS=1 "$py" $alaunch $port "$acc_train" --steps 16 --step-sleep 0.3 > "$d/log" 2>&1 &
	al=$!
	if wait_step "$d/metrics.jsonl" 3; then
		touch "$d/stop"
		kill -USR1 $(pgrep -P $al)
	fi
	wait $al
	# accelerate launch, like torchrun, turns a worker's 75 into 1
	grep -q "exitcode *: 75" "$d/log" &&
	    pass "accelerate: SIGUSR1 with the stop file: the ranks exit 75" ||
	    fail "accelerate: no exit 75: $(tail -n 8 "$d/log")"
	n=$(sed -n 's/.*"event":"checkpoint","step":\([0-9]*\).*/\1/p' "$d/metrics.jsonl" | tail -n 1)
	[ -n "$n" ] || fatal "accelerate: no checkpoint event: $(tail -n 2 "$d/metrics.jsonl")"
	rm -f "$d/stop"
	nextport
	CADRE_RESUME_FROM=$d/checkpoints/step-$n CADRE_ATTEMPT=2 PET_REDIRECTS=1 \
	    "$py" $alaunch $port "$acc_train" --steps 16 > "$d/log2" 2>&1 ||
	    fail "accelerate resume: exit $?: $(tail -n 5 "$d/log2")"
	metrics "accelerate, stopped at $n, resumed" "$d/metrics.jsonl" 16
	"$py" - "$work/acc0/metrics.jsonl" "$d/metrics.jsonl" <<'PY' &&
import json, sys
def losses(p):
    return [e["loss"] for e in map(json.loads, open(p)) if e["event"] == "step"]
sys.exit(losses(sys.argv[1]) != losses(sys.argv[2]))
PY
	pass "accelerate: the resumed run's losses equal the uninterrupted run's" ||
	fail "accelerate: the resumed run's losses differ"
else
	echo "SKIP: no accelerate: the accelerate cases"
fi

# ---------------------------------------------------------------- print_steps
d=$work/ps && contract "$d"
"$py" "$top_srcdir/tests/program/print_steps.py" --steps 40 --step-sleep 0.1 \
    > "$d/out" 2>&1 &
p=$!
wait_for 30 grep -q '^step 8 ' "$d/out" && touch "$d/stop" && kill -USR1 $p
wait $p
check "print_steps: SIGUSR1 with the stop file" "$?" 75
ck=$(sed -n 's/^checkpoint step \([0-9]*\) path \(.*\)/\2/p' "$d/out")
grep -q '^step x loss$' "$d/out" || fail "print_steps: no malformed line"
[ -n "$ck" ] && [ -f "$ck/state.json" ] || fail "print_steps: checkpoint: $(tail -n 2 "$d/out")"
rm -f "$d/stop"
CADRE_RESUME_FROM=$ck "$py" "$top_srcdir/tests/program/print_steps.py" \
    --steps 40 --step-sleep 0 > "$d/out2" 2>&1 || fail "print_steps resume: exit $?"
n=${ck##*step-}
if [ "$(head -n 1 "$d/out2" | cut -d' ' -f1-2)" = "step $((n + 1))" ] &&
    grep -Eq '^step 40 loss [0-9.]+ samples/s [0-9.]+$' "$d/out2"; then
	pass "print_steps: stopped at $n, resumed at $((n + 1)), ran to 40"
else
	fail "print_steps resume: $(head -n 2 "$d/out2")"
fi
exit $failed
