# Random lines that stress the tokenizer's Unicode rules, the same on every
# run (fixed seed): code points from many blocks (controls, combining
# marks, Greek, Cyrillic, Hangul, kana, CJK and its compatibility block,
# punctuation, separators, private use, emoji, astral planes), ASCII words
# between them, and stray invalid UTF-8 bytes. Code points Python's
# unicodedata calls unassigned are left out: utf8proc may know them from a
# newer Unicode (see docs/tokenizer.md).
#   randtext.py LINES SEED > FILE
import random
import sys
import unicodedata

BLOCKS = [(0x00, 0x7F), (0x80, 0x2FF), (0x300, 0x36F), (0x370, 0x4FF),
          (0x590, 0x6FF), (0x900, 0x97F), (0x1100, 0x11FF), (0x2000, 0x206F),
          (0x2070, 0x2BFF), (0x3000, 0x30FF), (0x3400, 0x3440), (0x4E00, 0x9FFF),
          (0xAC00, 0xD7A3), (0xE000, 0xE010), (0xF900, 0xFAFF), (0xFB00, 0xFFFF),
          (0x1F300, 0x1FAFF), (0x20000, 0x20100), (0x2F800, 0x2FA1F),
          (0x10000, 0x10FFFF)]
WORDS = ["a", "e", "the", " ", "  ", "Ab", "[SEP]", "[cls]", "É", "x" * 101]
BAD = [b"\xff", b"\xc3", b"\xe4\xb8", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]

rng = random.Random(int(sys.argv[2]))
out = sys.stdout.buffer
for _ in range(int(sys.argv[1])):
    parts = []
    for _ in range(rng.randint(0, 40)):
        lo, hi = rng.choice(BLOCKS)
        c = rng.randint(lo, hi)
        if c == 10 or 0xD800 <= c <= 0xDFFF or unicodedata.category(chr(c)) == "Cn":
            c = 32
        parts.append(chr(c).encode())
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice(WORDS).encode())
        elif r < 0.33:
            parts.append(rng.choice(BAD))
    out.write(b"".join(parts) + b"\n")
