#!/bin/sh
# cadre-train against the torch reference (tests/reference/bert_ref.py) and,
# where it installs, Hugging Face transformers: bert-tiny and bert-mini
# (MLM + NSP) and bert-tiny classification, random weights, padded batches,
# dropout off: losses, logits and every gradient within 1e-4 max relative
# error; then 20 steps of AdamW and 20 of LAMB (with gradient accumulation):
# every step's loss within 1e-4; the same with dropout 0.1, the reference
# drawing cadre's Philox masks; a checkpoint transformers saved, loaded by
# cadre-train. Each comparison prints its worst tensor.
set -eu
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
train="$top_builddir/cadre-train"
ref="$top_srcdir/tests/reference/bert_ref.py"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
threads=2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
hf=--hf
"$py" -c 'import transformers' 2>/dev/null || {
	echo "transformers is not installed: comparing with the torch.nn reference only"
	hf=
}
rc=0
n=0
compare() {	# NAME CHECK CADRE-TRAIN-ARGS... (a later --dropout wins)
	name=$1 check=$2
	shift 2
	n=$((n + 1))
	echo "== $name"
	"$train" synthetic --quiet --dropout 0 --init-all --threads "$threads" \
	    --out "$work/$n" "$@" >/dev/null || { echo "FAIL: cadre-train $*"; rc=1; return; }
	# shellcheck disable=SC2086
	"$py" "$ref" "$work/$n" --threads "$threads" --check "$check" $hf || rc=1
}
compare "bert-tiny pretraining, one step" grads --model bert-tiny --batch 4 --seq 32 --steps 1
compare "bert-mini pretraining, one step" grads --model bert-mini --batch 4 --seq 32 --steps 1
compare "bert-tiny classification (3 labels), one step" grads --model bert-tiny --task classify \
    --num-labels 3 --batch 4 --seq 32 --steps 1
compare "bert-tiny, 20 steps of AdamW, linear schedule, clipping" steps --model bert-tiny \
    --batch 4 --seq 32 --steps 20 --optimizer adamw --lr 1e-3 --warmup 5 --schedule linear \
    --grad-clip 1.0
compare "bert-tiny, 20 steps of LAMB, poly schedule, grad accumulation 2" steps --model bert-tiny \
    --batch 2 --seq 32 --steps 20 --grad-accum 2 --optimizer lamb --lr 2e-3 --warmup 4 \
    --schedule poly --grad-clip 1.0
# Dropout on: the reference draws cadre's Philox masks itself
# (docs/trainer.md), so this checks the masks the GPU path must reproduce.
compare "bert-tiny pretraining, dropout 0.1 (Philox masks), one step" grads --model bert-tiny \
    --batch 4 --seq 32 --steps 1 --dropout 0.1 --seed 7
compare "bert-tiny classification, dropout 0.1 (Philox masks), one step" grads --model bert-tiny \
    --task classify --batch 4 --seq 32 --steps 1 --dropout 0.1 --seed 9
compare "bert-tiny, 10 steps of AdamW with dropout 0.1" steps --model bert-tiny --batch 4 \
    --seq 32 --steps 10 --optimizer adamw --lr 1e-3 --warmup 2 --dropout 0.1 --seed 3
if [ -n "$hf" ]; then
	# A checkpoint transformers wrote (save_pretrained) loads into cadre-train.
	echo "== a Hugging Face BertForPreTraining checkpoint loaded by cadre-train --init"
	n=$((n + 1))
	if "$py" "$top_srcdir/tests/reference/make_hf.py" "$work/hf" 2>/dev/null; then
		"$train" synthetic --quiet --dropout 0 --threads "$threads" --init "$work/hf" \
		    --batch 4 --seq 32 --steps 1 --out "$work/$n" >/dev/null &&
		    "$py" "$ref" "$work/$n" --threads "$threads" --check grads --hf || rc=1
	else
		echo "FAIL: transformers could not write a checkpoint"
		rc=1
	fi
fi
exit $rc
