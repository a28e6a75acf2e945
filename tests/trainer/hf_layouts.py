# The Hugging Face side of tests/trainer/hf-layouts.sh.
#
#   hf_layouts.py make DIR
#       random small BERTs saved by transformers' save_pretrained
#       (safetensors, fp32) into DIR/NAME: model (BertModel), nopool
#       (BertModel without a pooler), mlm (BertForMaskedLM), pretrain
#       (BertForPreTraining), cls3 (BertForSequenceClassification, 3
#       labels); bin (a BertModel saved as pytorch_model.bin only) and gpt2
#       (a GPT2Model) for the errors.
#   hf_layouts.py compare SRC KIND OUT
#       OUT is `cadre-train synthetic --init SRC --out OUT` (dropout 0):
#       every weight of SRC is in OUT's initial model.safetensors, equal;
#       cadre's logits equal transformers' on the same batch within 1e-4
#       of the largest: of SRC's own class where it has the head (KIND
#       pretrain, mlm, cls3), and of OUT's weights loaded into
#       BertForPreTraining or BertForSequenceClassification always.
#   hf_layouts.py export CKPT IDS TEXT OUT
#       a checkpoint of a classification run: AutoTokenizer and
#       AutoModelForSequenceClassification load it with no arguments; the
#       tokenizer's ids of TEXT's lines equal IDS (cadre-train tokenize's);
#       id2label is the shards' labels.txt; the logits equal cadre's (OUT,
#       `synthetic --init CKPT`).
# Prints PASS/FAIL lines; exit 1 on a failure.
import os
import sys

import torch
import transformers
from safetensors.torch import load_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from make_hf import randomise  # noqa: E402

DIMS = dict(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=64, max_position_embeddings=64,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
failed = False


def check(ok, msg):
    global failed
    print(("PASS: " if ok else "FAIL: ") + msg)
    failed = failed or not ok


def make(d):
    torch.manual_seed(3)
    cfg = transformers.BertConfig(**DIMS)
    models = {
        "model": transformers.BertModel(cfg),
        "nopool": transformers.BertModel(cfg, add_pooling_layer=False),
        "mlm": transformers.BertForMaskedLM(cfg),
        "pretrain": transformers.BertForPreTraining(cfg),
        "cls3": transformers.BertForSequenceClassification(
            transformers.BertConfig(num_labels=3, **DIMS)),
    }
    for name, m in models.items():
        randomise(m).save_pretrained(d + "/" + name, safe_serialization=True)
    transformers.BertModel(cfg).save_pretrained(d + "/bin", safe_serialization=False)
    transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=128, n_positions=64, n_embd=32, n_layer=2, n_head=2)).save_pretrained(
        d + "/gpt2", safe_serialization=True)


def cadre_name(name):
    if name.startswith(("embeddings.", "encoder.", "pooler.")):
        return "bert." + name
    return name


def logits_check(what, ours, theirs):
    err = ((ours - theirs).abs().max() / theirs.abs().max()).item()
    check(ours.shape == theirs.shape and err < 1e-4,
          "%s: %d logits, max difference %.2g of the largest" % (what, ours.numel(), err))


def run(m, b, labels):
    ids, types, mask = (b[k][0] for k in ("input_ids", "token_type_ids", "attention_mask"))
    with torch.no_grad():
        o = m.eval()(input_ids=ids, token_type_ids=types, attention_mask=mask)
    if hasattr(o, "prediction_logits"):
        return o.prediction_logits[labels != -100], o.seq_relationship_logits
    if isinstance(m, transformers.BertForMaskedLM):
        return o.logits[labels != -100], None
    return None, o.logits


def compare(src, kind, out):
    loaded = load_file(out + "/model.safetensors")
    mine = load_file(src + "/model.safetensors")
    bad = [k for k, v in mine.items()
           if not k.endswith(("position_ids", "token_type_ids"))
           and not k.startswith("cls.predictions.decoder")
           and not (cadre_name(k) in loaded and torch.equal(loaded[cadre_name(k)], v))]
    check(not bad, "%s: every tensor of %s loaded unchanged%s" % (kind, src, " (not: %s)" % bad if bad else ""))
    b = load_file(out + "/batch.safetensors")
    s0 = load_file(out + "/step0.safetensors")
    labels = b["labels"][0]
    cls = kind == "cls3"
    own = {"pretrain": transformers.BertForPreTraining, "mlm": transformers.BertForMaskedLM,
           "cls3": transformers.BertForSequenceClassification}.get(kind)
    if own is not None:
        mlm, seq = run(own.from_pretrained(src), b, labels)
        if mlm is not None:
            logits_check("%s: MLM logits vs %s" % (kind, own.__name__), s0["mlm_logits"], mlm)
        if seq is not None:
            logits_check("%s: %s logits vs %s" % (kind, "class" if cls else "NSP", own.__name__),
                         s0["seq_logits"], seq)
    whole = transformers.BertForSequenceClassification if cls else transformers.BertForPreTraining
    mlm, seq = run(whole.from_pretrained(out), b, labels)
    if mlm is not None:
        logits_check("%s: MLM logits vs %s of cadre's weights" % (kind, whole.__name__),
                     s0["mlm_logits"], mlm)
    logits_check("%s: sequence logits vs %s of cadre's weights" % (kind, whole.__name__),
                 s0["seq_logits"], seq)


def export(ckpt, ids_file, text, out):
    tok = transformers.AutoTokenizer.from_pretrained(ckpt)
    lines = open(text, encoding="utf-8").read().split("\n")
    want = open(ids_file).read().split("\n")
    n = same = 0
    for line, w in zip(lines, want):
        if not line:
            continue
        n += 1
        got = tok(line, add_special_tokens=False)["input_ids"]
        same += " ".join(map(str, got)) == w
    check(n > 0 and same == n, "AutoTokenizer.from_pretrained(checkpoint) (%s): the same ids as "
          "cadre-train tokenize on %d/%d lines" % (type(tok).__name__, same, n))
    m = transformers.AutoModelForSequenceClassification.from_pretrained(ckpt)
    names = [l for l in open(sys.argv[6], encoding="utf-8").read().split("\n") if l]
    check(m.config.id2label == dict(enumerate(names)) and
          m.config.label2id == {l: i for i, l in enumerate(names)},
          "AutoModelForSequenceClassification: id2label %s from labels.txt" % m.config.id2label)
    b = load_file(out + "/batch.safetensors")
    _, seq = run(m, b, b["labels"][0])
    logits_check("AutoModelForSequenceClassification logits", load_file(out + "/step0.safetensors")["seq_logits"], seq)


if sys.argv[1] == "make":
    make(sys.argv[2])
elif sys.argv[1] == "compare":
    compare(sys.argv[2], sys.argv[3], sys.argv[4])
else:
    export(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
sys.exit(1 if failed else 0)
