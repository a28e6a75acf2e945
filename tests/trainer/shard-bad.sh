#!/bin/sh
# Bad shards and bad prep input get exact errors, exit 2, and leave no
# shard set behind: a truncated shard, a flipped byte (checksum), an id
# outside the vocab (named with its byte offset), a missing shard, another vocab; TSV and JSON lines without a label or
# field, not an object, not JSON, a line over 1 MiB, a missing file, no
# sequences, an --out that exists.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
. "$top_srcdir/tests/trainer/lib.sh"
need_prep

# expect WHAT MESSAGE ARGS...: exit 2 and exactly MESSAGE on stderr.
expect() {
	what=$1 want=$2
	shift 2
	"$tool" "$@" > "$work/out" 2> "$work/err"
	st=$?
	if [ $st -eq 2 ] && [ "$(cat "$work/err")" = "$want" ]; then
		pass "$what"
	else
		fail "$what: exit $st, got \"$(cat "$work/err")\", expected \"$want\""
	fi
}

cat > "$work/vocab.txt" <<'V'
[PAD]
[UNK]
[CLS]
[SEP]
[MASK]
the
cat
sat
on
mat
a
dog
ran
.
V
printf '[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n' > "$work/other.txt"
i=0
while [ $i -lt 40 ]; do
	printf 'the cat sat on the mat .\na dog ran .\nthe dog sat .\n\n'
	i=$((i + 1))
done > "$work/text.txt"
"$tool" prep --quiet --vocab "$work/vocab.txt" --format text --task pretrain \
    --seq-len 16 --shard-size 20 --out "$work/good" "$work/text.txt" || fail "prep of good text"

copy() { rm -rf "$work/$1"; cp -r "$work/good" "$work/$1"; }
s0=shard-00000.bin
size=$(wc -c < "$work/good/$s0")

copy trunc
head -c $((size - 10)) "$work/good/$s0" > "$work/trunc/$s0"
expect "truncated shard" "cadre-train prep: $work/trunc/$s0: truncated: $((size - 10)) bytes, the header says $size; run cadre-train prep again" \
    prep --info "$work/trunc"

copy flip
off=$((size - 60))
old=$(od -An -tu1 -j $off -N 1 "$work/good/$s0" | tr -d ' ')
new=$(( (old + 1) % 256 ))
printf "$(printf '\\%03o' $new)" | dd of="$work/flip/$s0" bs=1 seek=$off conv=notrunc 2>/dev/null
cmp -s "$work/good/$s0" "$work/flip/$s0" && fail "the byte was not flipped"
expect "flipped byte" "cadre-train prep: $work/flip/$s0: checksum mismatch: the file is corrupt or truncated; run cadre-train prep again" \
    prep --info "$work/flip"

# A token id outside the vocab under a checksum that matches (a bad
# writer, not a bad disk): the error names the record and its byte offset.
copy badid
if python3 -c 'import hashlib, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[402:404] = b"\xff\xff"
b[-32:] = hashlib.sha256(b[:-32]).digest()
open(p, "wb").write(b)' "$work/badid/$s0"; then
	expect "an id outside the vocab, at its offset" "cadre-train prep: $work/badid/$s0: byte 388: record 3: token 1: id 65535 is outside the vocab; run cadre-train prep again" \
	    prep --info "$work/badid"
else
	fail "python3 could not rewrite $work/badid/$s0"
fi

copy missing
rm "$work/missing/shard-00001.bin"
expect "missing shard" "cadre-train prep: $work/missing/shard-00001.bin: No such file or directory; make shards with cadre-train prep" \
    prep --info "$work/missing"

copy notshard
printf 'hello' > "$work/notshard/$s0"
expect "not a shard" "cadre-train prep: $work/notshard/$s0: magic: not a cadre shard (no \"CADRESHD\" at its start); make shards with cadre-train prep" \
    prep --info "$work/notshard"

sha_good=$(sha256sum "$work/vocab.txt" | cut -c 1-16)
sha_other=$(sha256sum "$work/other.txt" | cut -c 1-16)
expect "another vocab" "cadre-train prep: $work/other.txt (SHA-256 $sha_other...) is not the vocab $work/good/$s0 was made with ($sha_good...): use the vocab given to prep (a copy is $work/good/vocab.txt) or run cadre-train prep again with this one" \
    prep --info "$work/good" --vocab "$work/other.txt"

# Bad input to prep.
p() { echo "prep --quiet --vocab $work/vocab.txt --out $work/set"; }
printf 'text\tlabel\nthe cat\tyes\nthe dog sat\n' > "$work/nolabel.tsv"
# shellcheck disable=SC2046
expect "TSV line without a label" "$work/nolabel.tsv:3: error: no label: a line is TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL" \
    $(p) --format tsv --task classify --seq-len 16 "$work/nolabel.tsv"
printf 'the cat\tyes\na\tb\tc\td\n' > "$work/cols.tsv"
# shellcheck disable=SC2046
expect "TSV line of 4 columns" "$work/cols.tsv:2: error: more than 3 columns: a line is TEXT<TAB>LABEL or TEXT<TAB>TEXT_B<TAB>LABEL" \
    $(p) --format tsv --task classify --seq-len 16 "$work/cols.tsv"
printf 'the cat\t\n' > "$work/empty.tsv"
# shellcheck disable=SC2046
expect "TSV empty label" "$work/empty.tsv:1: error: empty label" \
    $(p) --format tsv --task classify --seq-len 16 "$work/empty.tsv"
printf '{"text": "the cat", "label": "a"}\n["the dog"]\n' > "$work/array.jsonl"
# shellcheck disable=SC2046
expect "JSON line not an object" "$work/array.jsonl:2:1: error: a line must be a JSON object" \
    $(p) --format jsonl --task classify --seq-len 16 "$work/array.jsonl"
printf '{"text": "the cat", "label": "a"}\n  {"text": "the dog"}\n' > "$work/nofield.jsonl"
# shellcheck disable=SC2046
expect "JSON line without the label field" "$work/nofield.jsonl:2:3: error: no label field \"label\" (choose it with --label-field)" \
    $(p) --format jsonl --task classify --seq-len 16 "$work/nofield.jsonl"
printf '{"body": "the cat"}\n' > "$work/notext.jsonl"
# shellcheck disable=SC2046
expect "JSON line without the text field" "$work/notext.jsonl:1:1: error: no field \"text\" (choose it with --text-field)" \
    $(p) --format jsonl --task pretrain --seq-len 16 "$work/notext.jsonl"
printf '{"text": "the cat", "label": 1.5}\n' > "$work/float.jsonl"
# shellcheck disable=SC2046
expect "JSON label not a string or whole number" "$work/float.jsonl:1:1: error: a label that is neither a string nor a whole number in label field \"label\"" \
    $(p) --format jsonl --task classify --seq-len 16 "$work/float.jsonl"
printf '{"text": "the cat", "label": "a"}\n\n{"text": "the cat" "label": "a"}\n' > "$work/syntax.jsonl"
# shellcheck disable=SC2046
expect "not JSON" "$work/syntax.jsonl:3:20: error: not JSON: expected ',' or '}'" \
    $(p) --format jsonl --task classify --seq-len 16 "$work/syntax.jsonl"
{ printf 'the cat\n'; head -c 1100000 /dev/zero | tr '\0' 'a'; printf '\n'; } > "$work/long.txt"
# shellcheck disable=SC2046
expect "line over 1 MiB" "$work/long.txt:2: error: line of 1100000 bytes, over the 1048576-byte bound: split it" \
    $(p) --format text --task pretrain --seq-len 16 "$work/long.txt"
# shellcheck disable=SC2046
expect "missing file" "cadre-train prep: $work/nonexistent.txt: No such file or directory" \
    $(p) --format text --task pretrain --seq-len 16 "$work/text.txt" "$work/nonexistent.txt"
printf '\n\n   \n' > "$work/blank.txt"
# shellcheck disable=SC2046
expect "no sequences" "cadre-train prep: no sequences: the text has no document with a token (documents are separated by blank lines)" \
    $(p) --format text --task pretrain --seq-len 16 "$work/blank.txt"
: > "$work/zero.txt"
# shellcheck disable=SC2046
expect "an empty file" "cadre-train prep: no sequences: the text has no document with a token (documents are separated by blank lines)" \
    $(p) --format text --task pretrain --seq-len 16 "$work/zero.txt"
expect "--out exists" "cadre-train prep: $work/good exists: remove it or choose another --out" \
    prep --quiet --vocab "$work/vocab.txt" --out "$work/good" --format text --task pretrain --seq-len 16 "$work/text.txt"
expect "text for classify" "cadre-train prep: --format text is for --task pretrain" \
    prep --vocab "$work/vocab.txt" --out "$work/set" --format text --task classify --seq-len 16 "$work/text.txt"
expect "--seq-len 4" "cadre-train prep: --seq-len wants a whole number from 8 to 65536, not \"4\"" \
    prep --vocab "$work/vocab.txt" --out "$work/set" --format text --task pretrain --seq-len 4 "$work/text.txt"

"$tool" prep --vocab "$work/vocab.txt" --out "$work/no/such/dir" --format text \
    --task pretrain --seq-len 16 "$work/text.txt" > /dev/null 2> "$work/err"
st=$?
if [ $st -eq 2 ] && grep -q "^cadre-train prep: cannot make $work/no/such/dir.tmp-[0-9]*: No such file or directory\$" "$work/err"; then
	pass "--out in a missing directory: refused before the work"
else
	fail "--out in a missing directory: exit $st, $(cat "$work/err")"
fi

if [ -e "$work/set" ] || ls -a "$work" | grep -q 'tmp-'; then
	fail "a shard set or temporary directory was left behind"
else
	pass "nothing left behind"
fi
exit $failed
