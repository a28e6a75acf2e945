#!/usr/bin/python3
"""Writes a randomly initialised Hugging Face BertForPreTraining (bert-tiny
dimensions) with transformers' own save_pretrained (safetensors) into DIR,
so that tests/trainer/reference.sh can check that a checkpoint cadre did
not write loads into cadre-train."""
import sys

import torch
import transformers

torch.manual_seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
cfg = transformers.BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=512,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
m = transformers.BertForPreTraining(cfg)
with torch.no_grad():
    for n, p in m.named_parameters():
        if "LayerNorm.weight" in n:
            p.add_(0.1 * torch.randn_like(p))
        elif "bias" in n:
            p.normal_(0.0, 0.02)
m.save_pretrained(sys.argv[1], safe_serialization=True)
