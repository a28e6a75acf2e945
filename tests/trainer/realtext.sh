#!/bin/sh
# Prints real text found on any Debian machine, one line per line: every
# line with a non-ASCII character of /usr/share/doc/*/copyright (names,
# accents, other scripts), /usr/share/common-licenses/*, then the package
# descriptions apt knows (apt-cache dumpavail). Blank lines are left out.
# Used by tests/trainer/tokenizer-hf.sh and bench/prep-tokenize.
#   realtext.sh [MAX_LINES]
set -eu
max=${1:-200000}
export LC_ALL=C
{
	for f in /usr/share/doc/*/copyright; do
		[ -r "$f" ] && grep '[^ -~	]' "$f" 2>/dev/null || true
	done
	for f in /usr/share/common-licenses/*; do
		[ -f "$f" ] && cat "$f"
	done
	if command -v apt-cache >/dev/null 2>&1; then
		apt-cache dumpavail 2>/dev/null | awk '
			/^Description: / { sub(/^Description: /, ""); print; d = 1; next }
			d && /^ / { l = $0; sub(/^ /, "", l); if (l != ".") print l; next }
			{ d = 0 }'
	fi
} | grep -v '^[[:space:]]*$' | head -n "$max"
