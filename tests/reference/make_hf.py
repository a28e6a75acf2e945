#!/usr/bin/python3
"""Writes a randomly initialised Hugging Face BertForPreTraining (bert-tiny
dimensions) with transformers' own save_pretrained (safetensors) into DIR,
so that tests/trainer/reference.sh can check that a checkpoint cadre did
not write loads into cadre-train."""
import sys

import torch
import transformers



def randomise(m):
    """Noise on the biases and LayerNorm too (transformers starts them at
    0 and 1), so that every parameter matters in a comparison."""
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "LayerNorm.weight" in n:
                p.add_(0.1 * torch.randn_like(p))
            elif "bias" in n:
                p.normal_(0.0, 0.02)
    return m


if __name__ == "__main__":
    torch.manual_seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    cfg = transformers.BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=512,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    randomise(transformers.BertForPreTraining(cfg)).save_pretrained(sys.argv[1],
                                                                   safe_serialization=True)
