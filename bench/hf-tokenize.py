#!/usr/bin/env python3
"""Tokens per second of Hugging Face's BertTokenizerFast (the Rust
tokenizers library) on TEXT with VOCAB, uncased, no special tokens: the
lines batch-encoded 10,000 at a time through the backend tokenizer
(encode_batch, no Python-side conversion), timing the encoding only (text
in memory), the median of RUNS. Threads: as TOKENIZERS_PARALLELISM and
RAYON_NUM_THREADS say. Prints "TOKENS_PER_S TOKENS SECONDS".
  hf-tokenize.py VOCAB TEXT RUNS"""
import sys
import time

from transformers import BertTokenizerFast

vocab, text, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(text, "rb") as f:
    lines = f.read().decode("utf-8", errors="replace").split("\n")
if lines and lines[-1] == "":
    lines.pop()
tok = BertTokenizerFast(vocab, do_lower_case=True).backend_tokenizer
times = []
for _ in range(runs):
    tokens = 0
    t0 = time.perf_counter()
    for i in range(0, len(lines), 10000):
        for e in tok.encode_batch(lines[i:i + 10000], add_special_tokens=False):
            tokens += len(e.ids)
    times.append(time.perf_counter() - t0)
t = sorted(times)[len(times) // 2]
print("%d %d %.3f" % (tokens / t, tokens, t))
