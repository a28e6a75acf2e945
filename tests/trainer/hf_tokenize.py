# Ids from Hugging Face's BertTokenizer (the pure-Python one) for each line
# of a file, one line of space-separated ids per input line, as
# `cadre-train tokenize` prints them. Lines split on "\n" only; invalid
# UTF-8 becomes U+FFFD, which BERT drops.
#   hf_tokenize.py VOCAB TEXT > IDS
import sys

from transformers import BertTokenizer

vocab, text = sys.argv[1], sys.argv[2]
tok = BertTokenizer(vocab, do_lower_case=True)
with open(text, "rb") as f:
    lines = f.read().split(b"\n")
if lines and lines[-1] == b"":
    lines.pop()
out = []
for line in lines:
    ids = tok.convert_tokens_to_ids(tok.tokenize(line.decode("utf-8", errors="replace")))
    out.append(" ".join(str(i) for i in ids))
sys.stdout.write("".join(s + "\n" for s in out))
