#!/usr/bin/python3
"""The torch reference for cadre-train's CPU path.

Reads what `cadre-train synthetic --out DIR` wrote (config.json,
model.safetensors with the initial weights, batch.safetensors, step0.safetensors
with the first step's losses, logits and gradients, losses.txt, run.json),
rebuilds the same BERT from torch.nn pieces, feeds it the same batches and
compares: logits, losses and every parameter's gradient of the first step
(--check grads), and the loss of every step with AdamW or LAMB (--check steps).
With --hf it does the same against Hugging Face transformers'
BertForPreTraining / BertForSequenceClassification loaded from DIR.

--device cuda runs both references on the GPU (fp32, TF32 off; Hugging
Face with its eager attention), for a DIR that `cadre-train synthetic
--device cuda` wrote: its step0.safetensors has no logits (they stay on
the device), so the logits are compared only where the dump has them.
--families adds, per reference, the worst error of each tensor family
(embeddings, attention q/k/v, attention output, FFN, LayerNorms, pooler,
heads, losses), one line each ending in PASS or FAIL.

The error of a tensor is max|cadre - ref| / max(max|ref|, 1e-5), its max-norm
relative error; the floor of 1e-5 only matters for the key biases, whose
gradient is zero in exact arithmetic (softmax does not change when the same
value is added to every score of a row), so both sides hold rounding noise
of about 1e-11: every other tensor's largest gradient is above 4e-5 in these
tests. Exit status 1 when one exceeds --tol (default 1e-4).
"""
import argparse
import json
import math
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "I64": torch.int64, "F64": torch.float64,
          "I32": torch.int32}


def read_safetensors(path):
    """A small reader, so that the torch.nn reference needs no package
    beyond torch."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        buf = bytearray(data[base + b:base + en])
        t = torch.frombuffer(buf, dtype=DTYPES[e["dtype"]]) if en > b else \
            torch.zeros(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out


# ------------------------------------------------------------------ dropout
MASK32 = 0xFFFFFFFF


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on int64 tensors holding 32-bit values (products wrap
    in two's complement; the masks keep the right bits)."""
    for _ in range(10):
        p0 = c0 * 0xD2511F53
        p1 = c2 * 0xCD9E8D57
        c0, c1, c2, c3 = (((p1 >> 32) & MASK32) ^ c1 ^ k0, p1 & MASK32,
                          ((p0 >> 32) & MASK32) ^ c3 ^ k1, p0 & MASK32)
        k0 = (k0 + 0x9E3779B9) & MASK32
        k1 = (k1 + 0xBB67AE85) & MASK32
    return c0, c1, c2, c3


class Dropper:
    """cadre's keyed dropout (docs/trainer.md): element e of tensor `tensor`
    of layer `layer` at micro-step `step` is kept when the 24 high bits of
    word e % 4 of Philox(counter {e/4, layer<<8|tensor, step lo, step hi},
    key {seed lo, seed hi}) / 2^24 >= p."""

    def __init__(s, seed, p):
        s.seed, s.p, s.step = seed, p, 0
        s.p32 = torch.tensor(p, dtype=torch.float32)
        s.scale = torch.tensor(1.0, dtype=torch.float32) / (1.0 - s.p32)

    def __call__(s, x, layer, tensor):
        if s.p <= 0:
            return x
        n = x.numel()
        e = torch.arange(n, dtype=torch.int64, device=x.device)
        blk = e >> 2
        c1 = torch.full_like(blk, (layer << 8) | tensor)
        c2 = torch.full_like(blk, s.step & MASK32)
        c3 = torch.full_like(blk, s.step >> 32)
        k0 = torch.full_like(blk, s.seed & MASK32)
        k1 = torch.full_like(blk, s.seed >> 32)
        w = torch.stack(philox4x32_10(blk, c1, c2, c3, k0, k1), dim=1)
        word = w.gather(1, (e & 3)[:, None])[:, 0]
        u = (word >> 8).to(torch.float32) * (1.0 / 16777216.0)
        f = torch.where(u >= s.p32.to(x.device), s.scale.to(x.device),
                        torch.zeros((), dtype=torch.float32, device=x.device))
        return x * f.view(x.shape)


NO_DROPOUT = Dropper(0, 0.0)


# ------------------------------------------------------------------ model
class Embeddings(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"])
        s.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        s.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        s.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(s, ids, types, drop):
        pos = torch.arange(ids.shape[1], device=ids.device)[None, :]
        x = s.word_embeddings(ids) + s.token_type_embeddings(types) + s.position_embeddings(pos)
        return drop(s.LayerNorm(x), 0, 0)


class SelfAttention(nn.Module):
    def __init__(s, c):
        super().__init__()
        h = c["hidden_size"]
        s.nh = c["num_attention_heads"]
        s.query, s.key, s.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(s, x, addmask, drop, layer):
        B, T, H = x.shape
        hs = H // s.nh

        def split(t):
            return t.view(B, T, s.nh, hs).transpose(1, 2)
        q, k, v = split(s.query(x)), split(s.key(x)), split(s.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hs) + addmask
        p = drop(torch.softmax(scores, dim=-1).contiguous(), layer, 1)
        return (p @ v).transpose(1, 2).reshape(B, T, H)


class DenseLN(nn.Module):
    def __init__(s, c, inp):
        super().__init__()
        s.dense = nn.Linear(inp, c["hidden_size"])
        s.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(s, x, res, drop, layer, tensor):
        return s.LayerNorm(drop(s.dense(x), layer, tensor) + res)


class Attention(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.self = SelfAttention(c)
        s.output = DenseLN(c, c["hidden_size"])

    def forward(s, x, addmask, drop, layer):
        return s.output(s.self(x, addmask, drop, layer), x, drop, layer, 2)


class Intermediate(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(s, x):
        return F.gelu(s.dense(x))


class Layer(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.attention = Attention(c)
        s.intermediate = Intermediate(c)
        s.output = DenseLN(c, c["intermediate_size"])

    def forward(s, x, addmask, drop, layer):
        h = s.attention(x, addmask, drop, layer)
        return s.output(s.intermediate(h), h, drop, layer, 3)


class Encoder(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class Pooler(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["hidden_size"])


class Bert(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.embeddings = Embeddings(c)
        s.encoder = Encoder(c)
        s.pooler = Pooler(c)

    def forward(s, ids, types, mask, drop):
        addmask = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        x = s.embeddings(ids, types, drop)
        for i, layer in enumerate(s.encoder.layer):
            x = layer(x, addmask, drop, i)
        return x, torch.tanh(s.pooler.dense(x[:, 0]))


class Transform(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        s.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])


class Predictions(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.transform = Transform(c)
        s.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class Cls(nn.Module):
    def __init__(s, c):
        super().__init__()
        s.predictions = Predictions(c)
        s.seq_relationship = nn.Linear(c["hidden_size"], 2)


class RefModel(nn.Module):
    """BERT from torch.nn pieces, parameter names as Hugging Face's."""

    def __init__(s, c, task, num_labels):
        super().__init__()
        s.task = task
        s.layers = c["num_hidden_layers"]
        s.drop = NO_DROPOUT
        s.bert = Bert(c)
        if task == "pretrain":
            s.cls = Cls(c)
        else:
            s.classifier = nn.Linear(c["hidden_size"], num_labels)

    def forward(s, ids, types, mask, labels, seq_labels):
        x, pooled = s.bert(ids, types, mask, s.drop)
        if s.task == "pretrain":
            sel = labels != -100
            t = s.cls.predictions.transform
            h = t.LayerNorm(F.gelu(t.dense(x[sel])))
            mlm_logits = h @ s.bert.embeddings.word_embeddings.weight.t() + s.cls.predictions.bias
            seq_logits = s.cls.seq_relationship(pooled)
            mlm = F.cross_entropy(mlm_logits, labels[sel])
        else:
            mlm_logits = None
            seq_logits = s.classifier(s.drop(pooled, s.layers, 4))
            mlm = torch.zeros((), device=ids.device)
        seq = F.cross_entropy(seq_logits, seq_labels)
        return mlm + seq, mlm, seq, mlm_logits, seq_logits


class HFModel(nn.Module):
    """Hugging Face's own classes, loaded from cadre's files."""

    def __init__(s, d, task, device="cpu"):
        super().__init__()
        import transformers
        s.task = task
        cls = transformers.BertForPreTraining if task == "pretrain" else \
            transformers.BertForSequenceClassification
        if device == "cpu":
            s.m = cls.from_pretrained(d)
        else:
            # the plain attention (no SDPA kernels) in fp32, on the GPU
            try:
                s.m = cls.from_pretrained(d, attn_implementation="eager")
            except (TypeError, ValueError):
                s.m = cls.from_pretrained(d)
            s.m.float().to(device)

    def named_parameters(s, *a, **k):
        for n, p in s.m.named_parameters():
            yield n, p

    def forward(s, ids, types, mask, labels, seq_labels):
        if s.task == "pretrain":
            o = s.m(input_ids=ids, token_type_ids=types, attention_mask=mask,
                    labels=labels, next_sentence_label=seq_labels)
            sel = labels != -100
            mlm_logits = o.prediction_logits[sel]
            seq_logits = o.seq_relationship_logits
            mlm = F.cross_entropy(mlm_logits, labels[sel])
            seq = F.cross_entropy(seq_logits, seq_labels)
            return o.loss, mlm, seq, mlm_logits, seq_logits
        o = s.m(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=seq_labels)
        return o.loss, torch.zeros((), device=ids.device), o.loss, None, o.logits


# ------------------------------------------------------------------ comparison
FLOOR = 1e-5
DEVICE = "cpu"


def rel_err(a, b):
    a = a.detach().cpu().double()
    b = b.detach().cpu().double()
    d = (a - b).abs().max().item() if a.numel() else 0.0
    s = b.abs().max().item() if b.numel() else 0.0
    return d / max(s, FLOOR)


FAMILIES = ["embeddings", "attention q/k/v", "attention output", "FFN", "LayerNorms",
            "pooler", "heads", "losses and logits"]


def family(name):
    """The tensor family of a compared name (grad.PARAM, a loss, logits)."""
    if not name.startswith("grad."):
        return "losses and logits"
    n = name[5:]
    if "LayerNorm" in n:
        return "LayerNorms"
    if n.startswith("bert.embeddings."):
        return "embeddings"
    if ".attention.self." in n:
        return "attention q/k/v"
    if ".attention.output." in n:
        return "attention output"
    if ".intermediate." in n or (".encoder.layer." in n and ".output." in n):
        return "FFN"
    if n.startswith("bert.pooler."):
        return "pooler"
    return "heads"


class Report:
    families = False

    def __init__(s, label, tol):
        s.label, s.tol, s.rows = label, tol, []

    def add(s, name, a, b):
        if tuple(a.shape) != tuple(b.shape):
            s.rows.append((float("inf"), name + " (shape %s vs %s)" % (tuple(a.shape), tuple(b.shape))))
            return
        s.rows.append((rel_err(a, b), name))

    def finish(s):
        s.rows.sort()
        worst = s.rows[-1]
        bad = [r for r in s.rows if not r[0] <= s.tol]
        print("%s: %d tensors compared, worst %s max rel err %.3e (tolerance %.0e)%s"
              % (s.label, len(s.rows), worst[1], worst[0], s.tol, "" if not bad else "  FAIL"))
        if "key.bias" in worst[1]:
            other = [r for r in s.rows if "key.bias" not in r[1]][-1]
            print("  worst apart from the key biases (zero in exact arithmetic): %s %.3e"
                  % (other[1], other[0]))
        for e, n in bad[-10:]:
            print("  over tolerance: %s %.3e" % (n, e))
        if s.families:
            for fam in FAMILIES:
                rows = [r for r in s.rows if family(r[1]) == fam]
                if not rows:
                    continue
                w = rows[-1]
                print("  %s: %s: %d tensors, max rel err %.3e (%s), tolerance %.0e %s"
                      % (s.label, fam, len(rows), w[0], w[1], s.tol,
                         "PASS" if w[0] <= s.tol else "FAIL"))
        return not bad


def batch_at(batch, i):
    return tuple(batch[k][i].to(DEVICE) for k in
                 ("input_ids", "token_type_ids", "attention_mask", "labels", "seq_labels"))


def lr_at(run, s):
    lr, w, total = run["lr"], run["warmup"], run["steps"]
    if w > 0 and s < w:
        return lr * (s + 1) / w
    if run["schedule"] == "constant" or total <= w:
        return lr
    rem = max(0.0, (total - s) / (total - w))
    return lr * (rem if run["schedule"] == "linear" else rem ** run["poly_power"])


def no_decay(name):
    return "bias" in name or "LayerNorm" in name


def lamb_step(params, state, run, lr, t):
    b1, b2, eps, wd = run["beta1"], run["beta2"], run["eps"], run["weight_decay"]
    with torch.no_grad():
        for name, p in params:
            if name not in state:
                state[name] = (torch.zeros_like(p), torch.zeros_like(p))
            m, v = state[name]
            g = p.grad
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            u = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
            ratio = 1.0
            if not no_decay(name):
                u = u + wd * p
                pn, un = p.norm().item(), u.norm().item()
                if pn > 0 and un > 0:
                    ratio = pn / un
            p.sub_(lr * ratio * u)


def run_model(model, d, run, batch, check, tol, label, step0, losses):
    ok = True
    params = [(n, p) for n, p in model.named_parameters()]
    accum = run["grad_accum"]
    steps = max(run["steps"], 1) if check == "grads" else run["steps"]
    opt = None
    if check == "steps" and run["optimizer"] == "adamw":
        groups = [{"params": [p for n, p in params if not no_decay(n)], "weight_decay": run["weight_decay"]},
                  {"params": [p for n, p in params if no_decay(n)], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=run["lr"], betas=(run["beta1"], run["beta2"]), eps=run["eps"])
    lamb_state = {}
    worst = (0.0, -1)
    for s in range(steps):
        for _, p in params:
            p.grad = None
        tot = 0.0
        for u in range(accum):
            if getattr(model, "drop", None) is not None:
                model.drop.step = s * accum + u
            ids, types, mask, labels, seq = batch_at(batch, s * accum + u)
            loss, mlm, seqloss, mlm_logits, seq_logits = model(ids, types, mask, labels, seq)
            (loss / accum).backward()
            tot += loss.item() / accum
        if check == "grads":
            r = Report(label, tol)
            r.add("loss", step0["loss"], torch.tensor([tot]))
            r.add("mlm_loss", step0["mlm_loss"], mlm.detach().reshape(1))
            r.add("seq_loss", step0["seq_loss"], seqloss.detach().reshape(1))
            # a dump from the GPU has no logits (they stay on the device)
            if "seq_logits" in step0:
                r.add("seq_logits", step0["seq_logits"], seq_logits.detach())
            if mlm_logits is not None and "mlm_logits" in step0:
                r.add("mlm_logits", step0["mlm_logits"], mlm_logits.detach())
            names = set()
            for n, p in params:
                names.add(n)
                if "grad." + n not in step0:
                    r.rows.append((float("inf"), "grad.%s missing from step0.safetensors" % n))
                    continue
                r.add("grad." + n, step0["grad." + n], p.grad)
            for k in step0:
                if k.startswith("grad.") and k[5:] not in names:
                    r.rows.append((float("inf"), k + " has no reference parameter"))
            return r.finish()
        # a training step
        lr = lr_at(run, s)
        if run["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_([p for _, p in params], run["grad_clip"])
        if opt is not None:
            for gr in opt.param_groups:
                gr["lr"] = lr
            opt.step()
        else:
            lamb_step(params, lamb_state, run, lr, s + 1)
        e = abs(losses[s] - tot) / abs(tot)
        if e > worst[0]:
            worst = (e, s)
    bad = not worst[0] <= tol
    print("%s: %d steps of %s, losses %.6f -> %.6f, worst step %d max rel err %.3e (tolerance %.0e)%s"
          % (label, steps, run["optimizer"], losses[0], losses[-1], worst[1], worst[0], tol,
             "  FAIL" if bad else ""))
    return ok and not bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--check", choices=["grads", "steps"], default="grads")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--hf", action="store_true", help="also against transformers' classes")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the references run (cuda: fp32, TF32 off)")
    ap.add_argument("--families", action="store_true",
                    help="the worst error of each tensor family, PASS/FAIL each")
    a = ap.parse_args()
    global DEVICE
    Report.families = a.families
    if a.device == "cuda":
        if not torch.cuda.is_available():
            print("bert_ref.py: --device cuda but torch sees no CUDA device")
            sys.exit(77)
        DEVICE = "cuda"
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        print("device: %s (torch %s)" % (torch.cuda.get_device_name(0), torch.__version__))
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    d = a.dir
    cfg = json.load(open(d + "/config.json"))
    run = json.load(open(d + "/run.json"))
    batch = read_safetensors(d + "/batch.safetensors")
    weights = read_safetensors(d + "/model.safetensors")
    step0 = read_safetensors(d + "/step0.safetensors")
    losses = [float(line.split()[1]) for line in open(d + "/losses.txt")]
    num_labels = len(cfg.get("id2label", {})) or 2

    model = RefModel(cfg, run["task"], num_labels)
    model.load_state_dict(weights, strict=True)
    model.to(DEVICE)
    if run["dropout"] > 0:
        # cadre's Philox masks, reproduced here; Hugging Face's own dropout
        # draws other masks, so its classes are compared only without.
        model.drop = Dropper(run["seed"], run["dropout"])
        if a.hf:
            print("transformers: skipped (dropout %g: its masks are torch's, not cadre's)" % run["dropout"])
            a.hf = False
    ok = run_model(model, d, run, batch, a.check, a.tol, "torch.nn reference", step0, losses)
    if a.hf:
        try:
            import transformers
            hf = HFModel(d, run["task"], DEVICE)
        except Exception as e:  # noqa: BLE001 - report whatever stops transformers
            print("transformers: not usable here (%s: %s); compared with the torch.nn reference only"
                  % (type(e).__name__, e))
        else:
            hf.train()  # dropout is 0 in config.json
            ok = run_model(hf, d, run, batch, a.check, a.tol,
                           "transformers %s %s" % (transformers.__version__, type(hf.m).__name__),
                           step0, losses) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
