#!/bin/sh
# `cadre-train train --device cuda` on shards of real text: fp32 GPU
# against the CPU (20 steps, dropout 0.1: losses within 1e-4), gradient
# checkpointing on the GPU (losses bitwise equal), bf16 against fp32
# after 50 steps (within 1e-2), fp16 with loss scaling (completes,
# skipped_steps counted), a checkpoint written on the GPU resumed on the
# CPU and the other way round (losses within 1e-4 of a straight run); a
# timed checkpoint on the GPU resumed on the GPU (1e-6) and the CPU (1e-4);
# 200 steps of a bert-mini-sized MLM in bf16 and in fp16 (loss scaling)
# against fp32: the mean loss of the last 10 steps within 2%, fp16's
# skipped steps counted; NCCL with one rank (torchrun-style variables,
# CADRE_FORCE_NCCL=1): losses bitwise equal to the plain run, the
# communicator and its all-reduces seen in NCCL's own log; two GPUs under
# mpirun when there are two. Skipped (77) without a GPU or a build with
# CUDA.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
need_gpu
# real text: the Debian copyright files and package descriptions, made
# into shards here, or taken from CADRE_TEST_SHARDS (bench/gpu prepare
# makes them where prep is built, for a GPU machine without utf8proc)
shards="$work/shards"
if [ -n "${CADRE_TEST_SHARDS:-}" ] && [ -d "$CADRE_TEST_SHARDS" ]; then
	shards=$CADRE_TEST_SHARDS
elif ! "$tool" prep --help > /dev/null 2>&1; then
	echo "SKIP: cadre-train has no prep (built without utf8proc) and no CADRE_TEST_SHARDS"
	exit 77
else
	sh "$top_srcdir/tests/trainer/realtext.sh" 4000 > "$work/real.txt"
	"$tool" vocab --quiet --size 1000 -o "$work/vocab.txt" "$work/real.txt" ||
	    { echo "FAIL: vocab"; exit 1; }
	"$tool" prep --vocab "$work/vocab.txt" --format text --task pretrain \
	    --seq-len 32 --out "$shards" "$work/real.txt" > "$work/prep.log" 2>&1 ||
	    { cat "$work/prep.log"; echo "FAIL: prep"; exit 1; }
fi

MODEL='{"layers": 2, "hidden": 64, "heads": 2, "intermediate": 256, "vocab_size": 1024, "max_position": 64}'
run() {	# NAME STEPS [KEY VALUE]...: a run of the small model, its exit status
	n=$1 s=$2
	shift 2
	write_cfg "$work/$n.json" "$shards" "$work/$n" model "$MODEL" steps "$s" "$@"
	"$tool" train --config "$work/$n.json" --quiet > "$work/$n.log" 2>&1
}
final_loss() {
	losses "$work/$1" | tail -n 1 | cut -d ' ' -f 2
}
last10() {	# the mean loss of a run's last 10 steps
	losses "$work/$1" | tail -n 10 | awk '{ s += $2; n++ } END { if (n) printf "%.6f", s / n }'
}

run cpu 20 device '"cpu"'; a=$?
run gpu 20 device '"cuda"'; b=$?
if [ $a -eq 0 ] && [ $b -eq 0 ] && close_losses "$work/gpu" "$work/cpu" 1e-4; then
	pass "fp32 GPU and CPU: 20 losses within 1e-4 (dropout 0.1)"
else
	fail "fp32 GPU ($b) against CPU ($a): $(paste -d ' ' "$work/l1" "$work/l2" 2>/dev/null | tail -n 3 | tr '\n' ' ')"
fi
grep -q '"device":"cuda"' "$work/gpu/metrics.jsonl" &&
    pass "metrics say device cuda" || fail "metrics: device"

run gpuck 20 device '"cuda"' grad_checkpointing true; st=$?
losses "$work/gpu" > "$work/l1"
losses "$work/gpuck" > "$work/l2"
[ $st -eq 0 ] && cmp -s "$work/l1" "$work/l2" &&
    pass "GPU gradient checkpointing: losses bitwise equal" ||
    fail "GPU gradient checkpointing ($st): $(diff "$work/l1" "$work/l2" | head -3 | tr '\n' ' ')"

run f32 50 device '"cuda"' batch_size 16; a=$?
run b16 50 device '"cuda"' precision '"bf16"' batch_size 16; b=$?
if [ $a -eq 0 ] && [ $b -eq 0 ] && awk -v x="$(final_loss f32)" -v y="$(final_loss b16)" \
    'BEGIN { d = x - y; if (d < 0) d = -d; exit !(d <= 1e-2 * x) }'; then
	pass "bf16 loss after 50 steps $(final_loss b16) within 1e-2 of fp32's $(final_loss f32)"
else
	fail "bf16 ($b) $(final_loss b16) against fp32 ($a) $(final_loss f32)"
fi
run f16 50 device '"cuda"' precision '"fp16"' batch_size 16; st=$?
[ $st -eq 0 ] && grep -q '"event":"summary".*"skipped_steps":[0-9]' "$work/f16/metrics.jsonl" &&
    pass "fp16 with loss scaling: 50 steps, final loss $(final_loss f16), skipped steps counted" ||
    fail "fp16 ($st): $(tail -n 2 "$work/f16.log")"

# 200 steps of a bert-mini-sized model (4 layers, hidden 256): bf16 and
# fp16 (loss scaling) against fp32, the mean of the last 10 losses
MINI='{"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "vocab_size": 1024, "max_position": 64}'
run m32 200 device '"cuda"' model "$MINI" batch_size 16; a=$?
for p in bf16 fp16; do
	run "m$p" 200 device '"cuda"' model "$MINI" batch_size 16 precision "\"$p\""; b=$?
	x=$(last10 m32) y=$(last10 "m$p")
	skipped=$(sed -n 's/.*"event":"summary".*"skipped_steps":\([0-9]*\).*/\1/p' \
	    "$work/m$p/metrics.jsonl")
	note=
	[ "$p" = fp16 ] && note=", ${skipped:-no} overflow steps skipped"
	if [ $a -eq 0 ] && [ $b -eq 0 ] && [ -n "$x" ] && [ -n "$y" ] &&
	    { [ "$p" = bf16 ] || [ -n "$skipped" ]; } && awk -v x="$x" -v y="$y" \
	    'BEGIN { d = x - y; if (d < 0) d = -d; exit !(d <= 0.02 * x) }'; then
		pass "bert-mini-sized MLM, 200 steps: $p mean loss of the last 10 $y within 2% of fp32's $x$note"
	else
		fail "bert-mini-sized MLM, 200 steps: $p ($b) $y against fp32 ($a) $x$note: $(tail -n 2 "$work/m$p.log" | tr '\n' ' ')"
	fi
done

# GPU -> CPU: stopped after 10 on the GPU, resumed on the CPU
write_cfg "$work/g2c.json" "$shards" "$work/g2c" model "$MODEL" steps 20 device '"cuda"'
"$tool" train --config "$work/g2c.json" --quiet --stop-after 10 > "$work/g2c.log" 2>&1; a=$?
"$tool" train --config "$work/g2c.json" --quiet --device cpu >> "$work/g2c.log" 2>&1; b=$?
if [ $a -eq 75 ] && [ $b -eq 0 ] && close_losses "$work/g2c" "$work/cpu" 1e-4; then
	pass "a GPU checkpoint resumes on the CPU: 20 losses within 1e-4 of the straight run"
else
	fail "GPU -> CPU resume (exits $a, $b): $(tail -n 2 "$work/g2c.log")"
fi
# CPU -> GPU
write_cfg "$work/c2g.json" "$shards" "$work/c2g" model "$MODEL" steps 20 device '"cpu"'
"$tool" train --config "$work/c2g.json" --quiet --stop-after 10 > "$work/c2g.log" 2>&1; a=$?
"$tool" train --config "$work/c2g.json" --quiet --device cuda >> "$work/c2g.log" 2>&1; b=$?
if [ $a -eq 75 ] && [ $b -eq 0 ] && close_losses "$work/c2g" "$work/cpu" 1e-4; then
	pass "a CPU checkpoint resumes on the GPU: 20 losses within 1e-4 of the straight run"
else
	fail "CPU -> GPU resume (exits $a, $b): $(tail -n 2 "$work/c2g.log")"
fi

# A timed checkpoint on the GPU (checkpoint_every 1 s, steps of at least
# 100 ms, so about step 10 of 20), resumed on the GPU and on the CPU: a
# copy of the run whose checkpoints/latest names the timed checkpoint, and
# no later one, continues from it; its losses after the checkpoint are
# the straight GPU run's, within 1e-6 on the GPU (the same kernels and
# dropout masks) and 1e-4 on the CPU.
write_cfg "$work/tm.json" "$shards" "$work/tm" model "$MODEL" steps 20 device '"cuda"' \
    checkpoint_every 1 keep_checkpoints 1 keep_timed true
"$tool" train --config "$work/tm.json" --quiet --min-step-ms 100 > "$work/tm.log" 2>&1; a=$?
ck=$(sed -n 's/.*"event":"checkpoint","step":\([0-9]*\),.*"due_s".*/\1/p' \
    "$work/tm/metrics.jsonl" 2>/dev/null | head -n 1)
if [ $a -ne 0 ] || [ -z "$ck" ] || [ "$ck" -ge 20 ] || [ ! -d "$work/tm/checkpoints/step-$ck" ]; then
	fail "timed checkpoint on the GPU (exit $a): no timed checkpoint before step 20 (${ck:-none}); $(tail -n 2 "$work/tm.log" | tr '\n' ' ')"
else
	losses "$work/tm" | awk -v k="$ck" '$1 > k' > "$work/tm.after"
	for dev in cuda cpu; do
		rd="$work/tm-$dev"
		rm -rf "$rd"
		cp -r "$work/tm" "$rd"
		for c in "$rd"/checkpoints/step-*; do
			[ "$c" = "$rd/checkpoints/step-$ck" ] || rm -rf "$c"
		done
		printf 'step-%s\n' "$ck" > "$rd/checkpoints/latest"
		: > "$rd/metrics.jsonl"
		write_cfg "$work/tm-$dev.json" "$shards" "$rd" model "$MODEL" steps 20 \
		    device "\"$dev\"" checkpoint_every 1 keep_checkpoints 1 keep_timed true
		"$tool" train --config "$work/tm-$dev.json" --quiet > "$work/tm-$dev.log" 2>&1; b=$?
		tol=1e-6
		[ $dev = cpu ] && tol=1e-4
		losses "$rd" > "$work/tm.resumed"
		if [ $b -eq 0 ] && [ -s "$work/tm.after" ] &&
		    [ "$(wc -l < "$work/tm.resumed")" -eq "$(wc -l < "$work/tm.after")" ] &&
		    paste -d ' ' "$work/tm.after" "$work/tm.resumed" | awk -v tol=$tol '
			{ if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d;
			  m = $2 < 0 ? -$2 : $2; if (d > tol * m) bad = 1 }
			END { exit bad }'; then
			pass "the GPU's timed checkpoint at step $ck (of 20) resumes on $dev: $(wc -l < "$work/tm.after") losses within $tol of the straight GPU run"
		else
			fail "the GPU's timed checkpoint at step $ck resumed on $dev (exit $b): $(paste -d ' ' "$work/tm.after" "$work/tm.resumed" | head -n 2 | tr '\n' ' ') $(tail -n 2 "$work/tm-$dev.log" | tr '\n' ' ')"
		fi
	done
fi

# NCCL with one rank: WORLD_SIZE=1 is a plain run unless CADRE_FORCE_NCCL=1
# (trainer/train_setup.c); then the gradients' buckets and the step
# loop's reductions go through a one-rank communicator, which must change
# no bit. NCCL_DEBUG's log shows the communicator and the all-reduces.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null) ||
    port=$((29500 + $$ % 1000))
write_cfg "$work/nc1.json" "$shards" "$work/nc1" model "$MODEL" steps 20 device '"cuda"'
WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port CADRE_FORCE_NCCL=1 \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL \
    "$tool" train --config "$work/nc1.json" --quiet > "$work/nc1.log" 2>&1; st=$?
losses "$work/gpu" > "$work/l1"
losses "$work/nc1" > "$work/l2"
inits=$(grep -c 'Init COMPLETE' "$work/nc1.log")
colls=$(grep -c 'AllReduce' "$work/nc1.log")
if [ $st -eq 0 ] && [ -s "$work/l1" ] && cmp -s "$work/l1" "$work/l2" &&
    grep -q '"event":"start".*"comm":"nccl"' "$work/nc1/metrics.jsonl" &&
    [ "$inits" -ge 1 ] && [ "$colls" -ge 1 ]; then
	pass "NCCL with one rank (WORLD_SIZE=1 CADRE_FORCE_NCCL=1): 20 losses bitwise equal to the plain run, communicator initialised, $colls all-reduces in NCCL's log"
else
	fail "NCCL with one rank (exit $st): losses $(cmp -s "$work/l1" "$work/l2" && echo equal || echo differ), start metrics comm: $(grep -o '"comm":"[a-z]*"' "$work/nc1/metrics.jsonl" 2>/dev/null | head -n 1), NCCL inits $inits, all-reduces $colls; $(grep -v 'NCCL INFO' "$work/nc1.log" | tail -n 2 | tr '\n' ' ')"
fi

# two GPUs under mpirun: NCCL against one GPU with twice the batch
if command -v mpirun > /dev/null 2>&1 && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
	write_cfg "$work/dp.json" "$shards" "$work/dp" model "$MODEL" steps 10 \
	    device '"cuda"' batch_size 2 dropout 0
	write_cfg "$work/one.json" "$shards" "$work/one" model "$MODEL" steps 10 \
	    device '"cuda"' batch_size 4 dropout 0
	mpirun --oversubscribe -np 2 "$tool" train --config "$work/dp.json" --quiet \
	    > "$work/dp.log" 2>&1; a=$?
	"$tool" train --config "$work/one.json" --quiet > "$work/one.log" 2>&1; b=$?
	[ $a -eq 0 ] && [ $b -eq 0 ] && close_losses "$work/dp" "$work/one" 1e-5 &&
	    pass "NCCL, 2 GPUs x batch 2 = 1 GPU x batch 4 (losses 1e-5)" ||
	    fail "NCCL data parallel (exits $a, $b): $(tail -n 2 "$work/dp.log")"
else
	echo "SKIP: NCCL data parallelism (needs mpirun and two GPUs)"
fi
exit $failed
