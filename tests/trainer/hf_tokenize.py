# Ids from Hugging Face's BertTokenizer (the pure-Python one) or, with
# --fast, BertTokenizerFast (the Rust tokenizers library, batch encode)
# for each line of a file, one line of space-separated ids per input line,
# as `cadre-train tokenize` prints them. Lines split on "\n" only; invalid
# UTF-8 becomes U+FFFD, which BERT drops. With --fast, a line holding a
# code point that the two Hugging Face tokenizers treat differently (their
# Unicode tables differ: U+061D, punctuation since Unicode 14, is a letter
# to the Rust one, and so on) prints "-", and stderr lists those code
# points.
#   hf_tokenize.py [--fast] VOCAB TEXT > IDS
import os
import sys
import tempfile

from transformers import BertTokenizer, BertTokenizerFast

args = sys.argv[1:]
fast = args[:1] == ["--fast"]
if fast:
    args = args[1:]
vocab, text = args
with open(text, "rb") as f:
    lines = f.read().split(b"\n")
if lines and lines[-1] == b"":
    lines.pop()
lines = [line.decode("utf-8", errors="replace") for line in lines]
out = []



def disputed(lines):
    """Code points that BertTokenizer and BertTokenizerFast treat
    differently, with a vocab of a to z."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                          [chr(c) for c in range(ord("a"), ord("z") + 1)]) + "\n")
    slow, quick = BertTokenizer(f.name, do_lower_case=True), BertTokenizerFast(f.name, do_lower_case=True)
    os.unlink(f.name)
    # Between letters: split off (punctuation, CJK) or not; between spaces:
    # dropped (controls) or not.
    probes = ("a%sa", "a %s a")
    return {c for c in set("".join(lines))
            if any(slow.tokenize(p % c) != quick.tokenize(p % c) for p in probes)}


if fast:
    tok = BertTokenizerFast(vocab, do_lower_case=True)
    odd = disputed(lines)
    if odd:
        sys.stderr.write("code points the two tokenizers classify differently: %s\n" %
                         " ".join("U+%04X" % ord(c) for c in sorted(odd)))
    for i in range(0, len(lines), 4096):
        batch = lines[i:i + 4096]
        for line, ids in zip(batch, tok(batch, add_special_tokens=False)["input_ids"]):
            out.append("-" if odd.intersection(line) else " ".join(str(t) for t in ids))
else:
    tok = BertTokenizer(vocab, do_lower_case=True)
    for line in lines:
        ids = tok.convert_tokens_to_ids(tok.tokenize(line))
        out.append(" ".join(str(i) for i in ids))
sys.stdout.write("".join(s + "\n" for s in out))
