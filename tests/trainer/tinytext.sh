#!/bin/sh
# Prints a small deterministic text for training tests: 64 documents of 4
# pseudo-random sentences over 36 words, blank lines between documents
# (what `cadre-train prep --format text` reads). The same bytes every time.
awk 'BEGIN {
	split("the a cat dog sat on mat ran far away big small red blue " \
	    "green house tree under over quick brown fox jumps lazy day " \
	    "night sun moon star sky sea river hill road town city", w, " ");
	x = 12345;
	for (p = 0; p < 64; p++) {
		for (s = 0; s < 4; s++) {
			n = 4 + x % 9; line = "";
			for (i = 0; i < n; i++) {
				x = (x * 1103515245 + 12345) % 2147483648;
				line = line (i ? " " : "") w[1 + int(x / 65536) % 36];
			}
			print line ".";
		}
		print "";
	}
}'
