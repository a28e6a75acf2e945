#!/bin/sh
# A checkpoint written by `cadre-train train` loads with transformers'
# BertForPreTraining.from_pretrained: no missing or unexpected weights, the
# same word embeddings, and the same logits as cadre-train's forward pass
# from that checkpoint (`synthetic --init`, dropout off) on one batch.
# Skipped (77) without torch (tests/reference/setup.sh)
# or transformers.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
"$py" -c 'import transformers' 2>/dev/null || { echo "SKIP: no transformers"; exit 77; }
make_shards "$work/shards"
write_cfg "$work/c.json" "$work/shards" "$work/r" steps 5
"$tool" train --config "$work/c.json" --quiet || { echo "FAIL: train"; exit 1; }
"$py" "$top_srcdir/tests/trainer/hf_load.py" "$work/r/checkpoints/step-5" || failed=1
"$py" - "$work/r/checkpoints/step-5" <<'PY'
import json, struct, sys
import torch
from transformers import BertForPreTraining
d = sys.argv[1]
m = BertForPreTraining.from_pretrained(d)
b = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
s, e = h["bert.embeddings.word_embeddings.weight"]["data_offsets"]
w = torch.frombuffer(bytearray(b[8 + n + s:8 + n + e]), dtype=torch.float32)
w = w.view(m.bert.embeddings.word_embeddings.weight.shape)
if not torch.equal(w, m.bert.embeddings.word_embeddings.weight.data):
    print("FAIL: word embeddings differ")
    sys.exit(1)
print("PASS: word embeddings equal")
PY
[ $? -eq 0 ] || failed=1

# cadre-train's logits from the checkpoint: one forward (and step) of
# synthetic on a generated batch, dropout off; transformers' on the same.
"$tool" synthetic --init "$work/r/checkpoints/step-5" --dropout 0 --steps 1 \
    --batch 4 --seq 32 --seed 7 --quiet --out "$work/fw" > /dev/null ||
    { echo "FAIL: synthetic --init from the checkpoint"; exit 1; }
"$py" - "$work/r/checkpoints/step-5" "$work/fw" <<'PY'
import sys
import torch
from safetensors.torch import load_file
from transformers import BertForPreTraining
ckpt, fw = sys.argv[1], sys.argv[2]
b = load_file(fw + "/batch.safetensors")
s0 = load_file(fw + "/step0.safetensors")
m = BertForPreTraining.from_pretrained(ckpt).eval()
ids, types, mask = (b[k][0] for k in ("input_ids", "token_type_ids", "attention_mask"))
labels = b["labels"][0]
with torch.no_grad():
    o = m(input_ids=ids, token_type_ids=types, attention_mask=mask)
ok = True
for name, ours, theirs in (
        ("MLM logits at the masked positions", s0["mlm_logits"], o.prediction_logits[labels != -100]),
        ("NSP logits", s0["seq_logits"], o.seq_relationship_logits)):
    err = ((ours - theirs).abs().max() / theirs.abs().max()).item()
    if ours.shape != theirs.shape or not err < 1e-5:
        print("FAIL: %s: shape %s vs %s, max difference %.3g of the largest" %
              (name, tuple(ours.shape), tuple(theirs.shape), err))
        ok = False
    else:
        print("PASS: %s equal transformers' (%d values, max difference %.2g of the largest)" %
              (name, ours.numel(), err))
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || failed=1
exit $failed
