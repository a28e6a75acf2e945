#!/bin/sh
# cadre-train's GPU path against Hugging Face transformers on the same GPU
# (and the torch.nn reference of tests/reference/bert_ref.py): fp32,
# dropout 0, random weights (--init-all), padded batches. `cadre-train
# synthetic --device cuda` computes the steps through trainer/gpu.h and
# dumps them; bert_ref.py --device cuda runs the references on the GPU.
# bert-tiny, bert-mini and bert-base pretraining (MLM + NSP) and bert-tiny
# classification: the losses and every gradient of the first step, each
# tensor family's worst max relative error (embeddings, attention q/k/v,
# attention output, FFN, LayerNorms, pooler, heads, losses) against 1e-4
# of the tensor's largest value (reference.sh's measure); then a few
# steps of AdamW / LAMB: every step's loss within 1e-4. One line per
# figure, PASS or FAIL. Skipped (77) without a GPU, a build with CUDA, or
# a Python whose torch sees the GPU.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
. "$top_srcdir/tests/trainer/lib.sh"
need_gpu
ref="$top_srcdir/tests/reference/bert_ref.py"
# a Python whose torch sees the GPU (tests/reference/setup.sh's may be a
# CPU-only Debian torch; a GPU machine cannot install anything)
py=
for cand in "$(CADRE_NO_INSTALL=1 sh "$top_srcdir/tests/reference/setup.sh" 2>/dev/null)" \
    python3 /usr/bin/python3; do
	[ -n "$cand" ] && command -v "$cand" > /dev/null 2>&1 || continue
	if "$cand" -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' \
	    > /dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -z "$py" ]; then
	echo "SKIP: no Python with a torch that sees the GPU"
	exit 77
fi
hf=--hf
if ! "$py" -c 'import transformers' > /dev/null 2>&1; then
	echo "SKIP: transformers is not installed for $py: the torch.nn reference only"
	hf=
fi
"$py" -c 'import torch, sys; print("device:", torch.cuda.get_device_name(0), "torch",
    torch.__version__, end=" "); import transformers; print("transformers", transformers.__version__)' \
    2>/dev/null || echo
threads=4
n=0
# compare NAME CHECK CADRE-TRAIN-ARGS...: a dump from the GPU, checked on
# the GPU; bert_ref.py's lines turned into PASS/FAIL lines
compare() {
	name=$1 check=$2
	shift 2
	n=$((n + 1))
	if ! "$tool" synthetic --device cuda --quiet --dropout 0 --init-all \
	    --threads "$threads" --out "$work/$n" "$@" > "$work/$n.log" 2>&1; then
		fail "$name: cadre-train synthetic --device cuda $*: $(tail -n 2 "$work/$n.log" | tr '\n' ' ')"
		return
	fi
	# shellcheck disable=SC2086
	"$py" "$ref" "$work/$n" --device cuda --threads "$threads" --check "$check" \
	    --families $hf > "$work/$n.ref" 2>&1
	st=$?
	if [ $st -ne 0 ] && [ $st -ne 1 ]; then
		fail "$name: bert_ref.py exit $st: $(tail -n 3 "$work/$n.ref" | tr '\n' ' ')"
		return
	fi
	# grads: one line per reference and family; steps: one per reference
	awk -v name="$name" '
	    /^device:/ { next }
	    /^  .*: .*tolerance .* (PASS|FAIL)$/ {
		sub(/^  /, ""); st = $NF;
		print st ": " name ", " $0; if (st == "FAIL") bad = 1; next }
	    / steps of .*tolerance/ {
		st = / FAIL$/ ? "FAIL" : "PASS"; sub(/  FAIL$/, "");
		print st ": " name ", " $0 " " st; if (st == "FAIL") bad = 1; next }
	    /^transformers: not usable/ { print "FAIL: " name ", " $0; bad = 1; next }
	    /over tolerance|worst apart/ { print "  " $0; next }
	    /: [0-9]+ tensors compared/ { if (/ FAIL$/) bad = 1; next }
	    { print "  " $0 }
	    END { exit bad }' "$work/$n.ref" || failed=1
	[ $st -eq 0 ] || failed=1
}

compare "bert-tiny pretraining" grads --model bert-tiny --batch 4 --seq 32 --steps 1
compare "bert-mini pretraining" grads --model bert-mini --batch 4 --seq 32 --steps 1
compare "bert-base pretraining" grads --model bert-base --batch 2 --seq 64 --steps 1
compare "bert-tiny classification (3 labels)" grads --model bert-tiny --task classify \
    --num-labels 3 --batch 4 --seq 32 --steps 1
compare "bert-tiny, 10 steps of AdamW, clipping" steps --model bert-tiny --batch 4 --seq 32 \
    --steps 10 --optimizer adamw --lr 1e-3 --warmup 2 --schedule linear --grad-clip 1.0
compare "bert-mini, 5 steps of LAMB, grad accumulation 2" steps --model bert-mini --batch 2 \
    --seq 32 --steps 5 --grad-accum 2 --optimizer lamb --lr 2e-3 --warmup 1 --schedule poly \
    --grad-clip 1.0
compare "bert-base, 3 steps of AdamW" steps --model bert-base --batch 2 --seq 64 --steps 3 \
    --optimizer adamw --lr 1e-4 --warmup 0 --schedule constant --grad-clip 1.0
exit $failed
