#!/usr/bin/python3
"""Median time of one training step (forward, backward, AdamW) in torch, for
bench/cpu-step: the torch.nn reference of bert_ref.py (MLM head on the masked
positions only, as cadre-train) and, where installed, Hugging Face's
BertForPreTraining (MLM logits on every position, as it ships). Prints one
line per variant: "torch-ref MEDIAN_MS PEAK_RSS_MIB" and "hf ...". Peak RSS
is the process's, so each variant runs in its own process (--variant)."""
import argparse
import json
import os
import resource
import statistics
import sys
import time

import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_ref import RefModel, HFModel  # noqa: E402

PRESETS = {"bert-tiny": (2, 128, 2, 512), "bert-mini": (4, 256, 4, 1024),
           "bert-small": (4, 512, 8, 2048), "bert-medium": (8, 512, 8, 2048),
           "bert-base": (12, 768, 12, 3072), "bert-large": (24, 1024, 16, 4096)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="bert-mini")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variant", choices=["torch-ref", "hf"], default="torch-ref")
    ap.add_argument("--grad-checkpointing", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    L, H, A, I = PRESETS[a.model]
    cfg = {"vocab_size": 30522, "hidden_size": H, "num_hidden_layers": L,
           "num_attention_heads": A, "intermediate_size": I, "max_position_embeddings": 512,
           "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_act": "gelu",
           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
           "model_type": "bert", "architectures": ["BertForPreTraining"]}
    if a.variant == "hf":
        import tempfile
        import transformers
        d = tempfile.mkdtemp()
        json.dump(cfg, open(d + "/config.json", "w"))
        m = transformers.BertForPreTraining(transformers.BertConfig(**cfg))
        if a.grad_checkpointing:
            m.gradient_checkpointing_enable()
        model = m

        def step_loss(ids, types, mask, labels, seq):
            return m(input_ids=ids, token_type_ids=types, attention_mask=mask,
                     labels=labels, next_sentence_label=seq).loss
    else:
        model = RefModel(cfg, "pretrain", 2)

        def step_loss(ids, types, mask, labels, seq):
            return model(ids, types, mask, labels, seq)[0]
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    B, T = a.batch, a.seq
    times = []
    for s in range(a.steps):
        ids = torch.randint(0, 30522, (B, T))
        types = torch.zeros(B, T, dtype=torch.long)
        types[:, T // 2:] = 1
        mask = torch.ones(B, T, dtype=torch.long)
        labels = torch.full((B, T), -100, dtype=torch.long)
        sel = torch.rand(B, T) < 0.15
        labels[sel] = ids[sel]
        seq = torch.randint(0, 2, (B,))
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = step_loss(ids, types, mask, labels, seq)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    warm = times[1:] if len(times) > 2 else times
    print("%s %.3f %.1f" % (a.variant, statistics.median(warm),
                            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))


if __name__ == "__main__":
    main()
