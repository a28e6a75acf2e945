#!/bin/sh
# `cadre-train prep` end to end on real text (tests/trainer/realtext.sh)
# for pretrain, and on a small TSV and JSON lines file for classify: the
# counts, the label map, --info, the same shard bytes with --threads 1 and
# 2, a different seed pairing differently, and no temporary directory left.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
. "$top_srcdir/tests/trainer/lib.sh"
need_prep
# Control characters out, so that the JSON lines made below are JSON.
# Every option of prep's table (trainer/prep.c) is in its --help, and back.
sed -n 's/^[[:space:]]*{ "\([a-z0-9-]*\)", .*/--\1/p' "$top_srcdir/trainer/prep.c" | sort -u > "$work/table"
"$tool" prep --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u > "$work/helped"
if [ -s "$work/table" ] && cmp -s "$work/table" "$work/helped"; then
	pass "prep --help describes its $(wc -l < "$work/table") options"
else
	fail "prep --help and its option table differ: $(diff "$work/table" "$work/helped" | tr '\n' ' ')"
fi

sh "$top_srcdir/tests/trainer/realtext.sh" 12000 | LC_ALL=C tr -d '\000-\010\013-\037\177' |
    grep -v '^[[:space:]]*$' > "$work/lines.txt"
if [ "$(wc -l < "$work/lines.txt")" -lt 1000 ]; then
	echo "SKIP: too little real text on this machine"
	exit 77
fi
# Documents of 6 sentences (lines), blank lines between them.
awk 'NR > 1 && NR % 6 == 1 { print "" } { print }' "$work/lines.txt" > "$work/docs.txt"
ndocs=$(awk 'NR % 6 == 1' "$work/lines.txt" | wc -l)
"$tool" vocab --quiet --size 3000 -o "$work/vocab.txt" "$work/lines.txt" || fail "vocab"

prep() {	# OUT ARGS...
	o=$1
	shift
	"$tool" prep --vocab "$work/vocab.txt" --out "$work/$o" "$@" 2> "$work/$o.err"
}

prep p1 --format text --task pretrain --seq-len 64 --threads 1 --shard-size 1000 "$work/docs.txt"
st=$?
last=$(tail -n 1 "$work/p1.err")
if [ $st -eq 0 ] && echo "$last" | grep -q "^prep: $ndocs documents, [0-9]* sequences, [0-9]* tokens, "; then
	pass "pretrain from text: $last"
else
	fail "pretrain from text: exit $st, $(cat "$work/p1.err") (expected $ndocs documents)"
fi
seqs=$(echo "$last" | sed -n 's/.* documents, \([0-9]*\) sequences.*/\1/p')
shards=$(ls "$work/p1" | grep -c '^shard-[0-9]*\.bin$')
want_shards=$(( (seqs + 999) / 1000 ))
[ "$shards" -eq "$want_shards" ] && [ "$shards" -ge 2 ] &&
    pass "$seqs sequences in $shards shards of 1000" ||
    fail "$seqs sequences in $shards shards, expected $want_shards"
cmp -s "$work/vocab.txt" "$work/p1/vocab.txt" && pass "vocab.txt copied" || fail "vocab.txt copied"
# verified.rec: a line per shard, its checksum the one at the shard's end.
s1=$work/p1/shard-00001.bin
tailsum=$(tail -c 32 "$s1" | od -An -tx1 -v | tr -d ' \n')
[ "$(head -n 1 "$work/p1/verified.rec")" = "cadre-filerec 1" ] &&
    [ "$(grep -c ' shard-[0-9]*\.bin$' "$work/p1/verified.rec")" -eq "$shards" ] &&
    grep -q "^$tailsum $(stat -c %s "$s1") .* $(stat -c '%i %d' "$s1") shard-00001.bin\$" "$work/p1/verified.rec" &&
    pass "verified.rec: every shard's metadata and checksum" || fail "verified.rec: $(head -n 3 "$work/p1/verified.rec")"
"$tool" prep --info "$work/p1" --vocab "$work/vocab.txt" > "$work/info" 2>&1
if grep -q "^sequences: $seqs\$" "$work/info" && grep -q "^kind: pretrain\$" "$work/info" &&
    grep -q "^seq_len: 64\$" "$work/info" && grep -q "^shards: $shards\$" "$work/info"; then
	pass "--info checks the set and prints its header"
else
	fail "--info: $(cat "$work/info")"
fi

prep p2 --format text --task pretrain --seq-len 64 --threads 2 --shard-size 1000 "$work/docs.txt"
same=1
for f in "$work"/p1/*.bin "$work"/p1/*.txt; do	# not verified.rec: inodes, times
	cmp -s "$f" "$work/p2/$(basename "$f")" || same=0
done
[ "$(ls "$work/p1" | wc -l)" -eq "$(ls "$work/p2" | wc -l)" ] || same=0
[ $same -eq 1 ] && pass "--threads 1 and --threads 2: identical shard bytes" ||
    fail "--threads 1 and --threads 2 differ"

prep p3 --format text --task pretrain --seq-len 64 --threads 2 --shard-size 1000 --seed 7 "$work/docs.txt"
cmp -s "$work/p1/shard-00000.bin" "$work/p3/shard-00000.bin" &&
    fail "--seed 7 paired as the default seed" || pass "another --seed pairs differently"

prep p4 --format text --task pretrain --seq-len 64 --dupe-factor 2 --shard-size 100000 "$work/docs.txt"
seqs4=$(tail -n 1 "$work/p4.err" | sed -n 's/.* documents, \([0-9]*\) sequences.*/\1/p')
if [ -n "$seqs4" ] && [ "$seqs4" -gt $((seqs * 3 / 2)) ] && [ "$seqs4" -lt $((seqs * 5 / 2)) ]; then
	pass "--dupe-factor 2: $seqs4 sequences (about twice $seqs)"
else
	fail "--dupe-factor 2: ${seqs4:-none} sequences, once gave $seqs"
fi

# Two files cut at a document boundary: the same documents, the same shards.
cut=$(awk 'NF == 0 { n++; if (n == 100) { print NR; exit } }' "$work/docs.txt")
head -n "$cut" "$work/docs.txt" > "$work/part1.txt"
tail -n +"$((cut + 1))" "$work/docs.txt" > "$work/part2.txt"
prep p7 --format text --task pretrain --seq-len 64 --threads 2 --shard-size 1000 \
    "$work/part1.txt" "$work/part2.txt"
same=1
for f in "$work"/p1/*.bin "$work"/p1/*.txt; do	# not verified.rec: inodes, times
	cmp -s "$f" "$work/p7/$(basename "$f")" || same=0
done
[ $same -eq 1 ] && pass "two files cut between documents: identical shards" ||
    fail "two files cut between documents: different shards ($(tail -n 1 "$work/p7.err"))"

# The same documents as JSON lines (one per line, sentences on lines).
awk 'BEGIN { RS = ""; FS = "\n" }
	{ s = ""; for (i = 1; i <= NF; i++) { l = $i; gsub(/\\/, "\\\\", l); gsub(/"/, "\\\"", l);
	  gsub(/\t/, "\\t", l); s = s (i > 1 ? "\\n" : "") l }
	  printf "{\"id\": %d, \"body\": \"%s\"}\n", NR, s }' "$work/docs.txt" > "$work/docs.jsonl"
prep p5 --format jsonl --task pretrain --seq-len 64 --text-field body "$work/docs.jsonl"
st=$?
if [ $st -eq 0 ] && tail -n 1 "$work/p5.err" | grep -q "^prep: $ndocs documents, $seqs sequences, "; then
	pass "pretrain from JSON lines: the same documents and sequences as from text"
else
	fail "pretrain from JSON lines: exit $st, $(cat "$work/p5.err")"
fi
prep p6 --format jsonl --task pretrain --seq-len 64 --text-field body --shard-size 1000 "$work/docs.jsonl"
cmp -s "$work/p1/shard-00001.bin" "$work/p6/shard-00001.bin" &&
    pass "text and JSON lines give identical shards" ||
    fail "text and JSON lines give different shards"

# Classify: a TSV with a header and a JSON lines file.
printf 'sentence\tlabel\n' > "$work/c.tsv"
awk -F'\t' 'NR <= 300 { printf "%s\t%s\n", $0, (NR % 3 == 0 ? "positive" : NR % 3 == 1 ? "negative" : "neutral") }' \
    "$work/lines.txt" | tr -d '\r' | awk -F'\t' 'NF == 2' >> "$work/c.tsv"
ntsv=$(($(wc -l < "$work/c.tsv") - 1))
prep c1 --format tsv --task classify --seq-len 32 "$work/c.tsv"
st=$?
if [ $st -eq 0 ] && tail -n 1 "$work/c1.err" | grep -q "^prep: $ntsv examples, $ntsv sequences, " &&
    [ "$(cat "$work/c1/labels.txt")" = "$(printf 'negative\nneutral\npositive')" ]; then
	pass "classify from TSV: $ntsv examples, labels sorted"
else
	fail "classify from TSV: exit $st, $(cat "$work/c1.err"), labels $(cat "$work/c1/labels.txt" 2>/dev/null)"
fi
"$tool" prep --info "$work/c1" > "$work/info" 2>&1
grep -q "^label 2: positive\$" "$work/info" && grep -q "^num_labels: 3\$" "$work/info" &&
    pass "--info lists the label map" || fail "--info: $(cat "$work/info")"
cat > "$work/c.jsonl" <<'JSON'
{"premise": "A man is playing a guitar.", "hypothesis": "A person plays music.", "y": 0}
{"premise": "A dog runs in the park.", "hypothesis": "The cat sleeps.", "y": 2}

  {"premise": "Kids play football", "hypothesis": null, "y": 10, "extra": [1, 2]}
{"hypothesis": "Nobody is here.", "premise": "Ein Mann spielt Gitarre — schön.", "y": 1}
JSON
prep c2 --format jsonl --task classify --seq-len 16 --text-field premise \
    --text-b-field hypothesis --label-field y "$work/c.jsonl"
st=$?
if [ $st -eq 0 ] && tail -n 1 "$work/c2.err" | grep -q "^prep: 4 examples, 4 sequences, " &&
    [ "$(cat "$work/c2/labels.txt")" = "$(printf '0\n1\n2\n10')" ]; then
	pass "classify from JSON lines: 4 examples, numeric labels in numeric order"
else
	fail "classify from JSON lines: exit $st, $(cat "$work/c2.err"), labels $(cat "$work/c2/labels.txt" 2>/dev/null)"
fi
if ls -a "$work" | grep -q 'tmp-'; then
	fail "a temporary directory was left: $(ls -a "$work" | grep 'tmp-')"
else
	pass "no temporary directory left"
fi
exit $failed
