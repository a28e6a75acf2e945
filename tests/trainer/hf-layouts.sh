#!/bin/sh
# `--init` from the directories transformers' save_pretrained writes
# (tests/trainer/hf_layouts.py makes small random ones, fp32): BertModel
# with and without its pooler, BertForMaskedLM, BertForPreTraining and
# BertForSequenceClassification each load, every weight unchanged, and
# cadre's logits equal transformers' within 1e-4 (CPU, dropout off).
# Fine-tuning a bare BertModel for classification lowers the loss; its
# checkpoint loads with AutoTokenizer and AutoModelForSequenceClassification
# with no extra arguments: the same ids as `cadre-train tokenize`, the
# labels of labels.txt, the same logits. A classifier of another number of
# labels is started afresh with a warning. Bad input: GPT-2's files, GPT-2's
# tensors under a BERT config.json, a truncated model.safetensors, a
# config.json that disagrees with the shapes, a pytorch_model.bin-only
# directory: each an error naming the file and the tensor or field.
# Skipped (77) without torch (tests/reference/setup.sh) or transformers.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
"$py" -c 'import transformers' 2>/dev/null || skip "no transformers"
need_prep
hf="$top_srcdir/tests/trainer/hf_layouts.py"
"$py" "$hf" make "$work/hf" > "$work/make.log" 2>&1 ||
    { cat "$work/make.log"; fail "save_pretrained"; exit 1; }
syn="--dropout 0 --steps 1 --batch 4 --seq 32 --seed 7 --quiet"

# --- every layout loads, with equal logits
for k in model nopool mlm pretrain cls3; do
	task=pretrain
	[ $k = cls3 ] && task="classify --num-labels 3"
	# shellcheck disable=SC2086 # the options are words
	if "$tool" synthetic --init "$work/hf/$k" --task $task $syn --out "$work/o-$k" \
	    > /dev/null 2> "$work/err-$k"; then
		"$py" "$hf" compare "$work/hf/$k" $k "$work/o-$k" 2> /dev/null || failed=1
	else
		fail "$k: --init: $(cat "$work/err-$k")"
	fi
done
grep -q "nopool/model.safetensors has no pooler, MLM head, NSP head: initialised as Hugging Face does" \
    "$work/err-nopool" && pass "BertModel without a pooler: one line names what is initialised" ||
    fail "no notice of the initialised parts: $(cat "$work/err-nopool")"
grep -q "mlm/model.safetensors has no pooler, NSP head:" "$work/err-mlm" &&
    ! grep -q "has no" "$work/err-pretrain" &&
    pass "BertForMaskedLM: pooler and NSP head initialised; BertForPreTraining: nothing" ||
    fail "notices: $(cat "$work/err-mlm" "$work/err-pretrain")"

# --- bad input
bad() {	# WHAT DIR EXPECTED
	if "$tool" synthetic --init "$2" $syn --out "$work/o-bad" > /dev/null 2> "$work/err"; then
		fail "$1: loaded"
	elif grep -qF "$3" "$work/err"; then
		pass "$1: $(cat "$work/err")"
	else
		fail "$1: $(cat "$work/err")"
	fi
}
bad "GPT-2's directory" "$work/hf/gpt2" \
    "gpt2/config.json: field 'model_type': \"gpt2\", expected \"bert\""
mkdir "$work/g2" && cp "$work/hf/gpt2/model.safetensors" "$work/g2/" &&
    cp "$work/hf/model/config.json" "$work/g2/"
bad "GPT-2's tensors" "$work/g2" "g2/model.safetensors: tensor 'h.0.attn.c_attn.bias' is not a parameter"
mkdir "$work/tr" && cp "$work/hf/model/config.json" "$work/tr/" &&
    head -c 20000 "$work/hf/model/model.safetensors" > "$work/tr/model.safetensors"
bad "truncated model.safetensors" "$work/tr" \
    "tr/model.safetensors: tensor 'embeddings.word_embeddings.weight': field 'data_offsets'"
mkdir "$work/cf" && cp "$work/hf/model/model.safetensors" "$work/cf/" &&
    sed 's/"intermediate_size": 64/"intermediate_size": 96/' "$work/hf/model/config.json" \
    > "$work/cf/config.json"
bad "config.json against the shapes" "$work/cf" \
    "cf/model.safetensors: tensor 'encoder.layer.0.intermediate.dense.weight': shape [64, 32], expected [96, 32] by the model's configuration (config.json)"
bad "pytorch_model.bin only" "$work/hf/bin" \
    "bin/model.safetensors: missing; $work/hf/bin/pytorch_model.bin is PyTorch's pickle, which cadre-train does not read (it can run code): convert it once with python3 -c"

# --- fine-tuning a bare BertModel for classification (2 labels)
awk 'BEGIN { x = 5; for (i = 0; i < 96; i++) { x = (x * 1103515245 + 12345) % 2147483648;
	l = int(x / 65536) % 2; printf "the cat sat %s on mat\t%s\n",
	(l == 0 ? "red" : "blue"), (l == 0 ? "good" : "bad") } }' > "$work/cls.tsv"
"$tool" vocab --quiet --size 60 -o "$work/cv.txt" "$work/cls.tsv" &&
    "$tool" prep --quiet --vocab "$work/cv.txt" --format tsv --task classify --seq-len 16 \
    --out "$work/cs" "$work/cls.tsv" || fail "classification shards"
write_cfg "$work/ft.json" "$work/cs" "$work/ft" task '"classify"' seq_len 16 \
    batch_size 8 steps 60 dropout 0 init "\"$work/hf/model\""
"$tool" train --config "$work/ft.json" --quiet 2> "$work/err"; st=$?
losses "$work/ft" > "$work/l"
first=$(awk 'NR <= 10 { s += $2 } END { print s / 10 }' "$work/l")
last=$(awk 'NR > 50 { s += $2 } END { print s / 10 }' "$work/l")
[ $st -eq 0 ] && [ "$(wc -l < "$work/l")" -eq 60 ] &&
    awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.85 * a) }' &&
    pass "fine-tuning BertModel for classification: mean loss $first (steps 1-10) -> $last (51-60)" ||
    fail "fine-tuning: exit $st, loss $first -> $last $(cat "$work/err")"
ck="$work/ft/checkpoints/step-60"
"$tool" tokenize --vocab "$ck/vocab.txt" "$work/cls.tsv" > "$work/ids" 2> "$work/err" ||
    fail "tokenize: $(cat "$work/err")"
"$tool" synthetic --init "$ck" --task classify --num-labels 2 $syn --out "$work/o-ft" \
    > /dev/null 2> "$work/err" || fail "synthetic --init the checkpoint: $(cat "$work/err")"
"$py" "$hf" export "$ck" "$work/ids" "$work/cls.tsv" "$work/o-ft" "$work/cs/labels.txt" \
    2> /dev/null || failed=1

# --- a classifier of 3 labels into a 2-label task: started afresh
write_cfg "$work/c3.json" "$work/cs" "$work/c3" task '"classify"' seq_len 16 \
    batch_size 8 steps 1 dropout 0 init "\"$work/hf/cls3\""
"$tool" train --config "$work/c3.json" --quiet 2> "$work/err"; st=$?
[ $st -eq 0 ] && grep -q "tensor 'classifier.weight' has shape \[3, 32\], this run's classifier \[2, 32\] (2 labels): initialised afresh" "$work/err" &&
    pass "3-label classifier, 2-label shards: $(grep classifier.weight "$work/err")" ||
    fail "mismatched classifier: exit $st $(cat "$work/err")"
exit $failed
