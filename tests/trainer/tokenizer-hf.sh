#!/bin/sh
# cadre's tokenizer against Hugging Face's BertTokenizer (the slow, pure
# Python one, do_lower_case=True) and BertTokenizerFast (the Rust
# tokenizers library, batch encode, the same vocab and normalisation) on
# real text: a vocab built by `vocab` from three lines in four of
# tests/trainer/realtext.sh, ids compared on the fourth lines; then the
# same on random Unicode lines (tests/trainer/randtext.py: accents,
# combining marks, CJK, controls, invalid UTF-8, words over 100
# characters; one seed for the vocab, another compared). Every line must
# give the same ids. Skipped (77) when transformers
# neither imports nor installs (tests/reference/setup.sh).
set -eu
: "${top_srcdir:=.}" "${top_builddir:=.}"
tool="$top_builddir/cadre-train"
# The same Python and install path as the torch reference.
py=$(sh "$top_srcdir/tests/reference/setup.sh") || exit $?
if ! "$py" -c 'import transformers' 2>/dev/null; then
	echo "SKIP: transformers does not import or install for $py"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sh "$top_srcdir/tests/trainer/realtext.sh" 60000 > "$work/all.txt"
nall=$(wc -l < "$work/all.txt")
if [ "$nall" -lt 4000 ]; then
	echo "SKIP: only $nall lines of text on this machine"
	exit 77
fi
awk 'NR % 4 != 0' "$work/all.txt" > "$work/train.txt"
awk 'NR % 4 == 0' "$work/all.txt" > "$work/test.txt"
"$py" "$top_srcdir/tests/trainer/randtext.py" 2000 1 > "$work/rand-train.txt"
"$py" "$top_srcdir/tests/trainer/randtext.py" 2000 2 > "$work/rand-test.txt"

rc=0
# compare NAME VOCAB_SIZE TRAIN TEST: against both tokenizers
compare() {
	"$tool" vocab --quiet --size "$2" -o "$work/vocab.txt" "$3"
	"$tool" tokenize --vocab "$work/vocab.txt" "$4" > "$work/cadre.ids"
	for hf in BertTokenizer BertTokenizerFast; do
		flag=
		[ $hf = BertTokenizerFast ] && flag=--fast
		# shellcheck disable=SC2086
		"$py" "$top_srcdir/tests/trainer/hf_tokenize.py" $flag "$work/vocab.txt" "$4" \
		    > "$work/hf.ids" 2> "$work/hf.err" || { cat "$work/hf.err"; echo "FAIL: $1: hf_tokenize.py $flag"; rc=1; continue; }
		lines=$(wc -l < "$4")
		tokens=$(wc -w < "$work/hf.ids")
		unk=$(tr ' ' '\n' < "$work/hf.ids" | grep -cx 1 || true)
		left=$(grep -cx -- - "$work/hf.ids" || true)
		bad=$(paste -d '\t' "$work/cadre.ids" "$work/hf.ids" | awk -F '\t' '$2 != "-" && $1 != $2' | wc -l)
		if [ "$bad" -ne 0 ] || [ "$(wc -l < "$work/cadre.ids")" -ne "$lines" ]; then
			paste -d '\n' "$4" "$work/cadre.ids" "$work/hf.ids" |
			    awk 'NR % 3 == 1 { t = $0 } NR % 3 == 2 { c = $0 } NR % 3 == 0 && $0 != "-" && c != $0 {
				print "text:  " t; print "cadre: " c; print "hf:    " $0; if (++n == 5) exit }'
			echo "FAIL: $1: ids differ from $hf's on $bad of $lines lines"
			rc=1
			continue
		fi
		note=
		[ "$left" -gt 0 ] && note="; $left lines left out, holding $(sed -n 's/.*differently: //p' "$work/hf.err")"
		echo "PASS: $1: ids equal $hf's on $((lines - left)) lines ($tokens tokens, $unk [UNK]; vocab of $2 from $(wc -l < "$3") other lines$note)"
	done
}
compare "real text" 8000 "$work/train.txt" "$work/test.txt"
cat "$work/rand-train.txt" "$work/train.txt" > "$work/train2.txt"
compare "random Unicode" 12000 "$work/train2.txt" "$work/rand-test.txt"
exit $rc
