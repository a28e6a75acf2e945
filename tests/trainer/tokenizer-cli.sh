#!/bin/sh
# `vocab` and `tokenize` from the command line: --help, usage errors, a bad
# vocab's message, a small vocab end to end, the same vocab twice, the
# vocab hash, and the same output with one thread and with three.
set -u
: "${top_srcdir:=.}" "${top_builddir:=.}"
. "$top_srcdir/tests/trainer/lib.sh"

for cmd in vocab tokenize; do
	if "$tool" "$cmd" --help > "$work/help" 2>&1 &&
	    head -n 1 "$work/help" | grep -q "^usage: cadre-train $cmd "; then
		pass "$cmd --help"
	else
		fail "$cmd --help"
	fi
done
"$tool" tokenize < /dev/null > /dev/null 2>&1
[ $? -eq 2 ] && pass "tokenize without --vocab: exit 2" || fail "tokenize without --vocab: exit 2"
"$tool" vocab --size 3 -o "$work/v" /dev/null > /dev/null 2>&1
[ $? -eq 2 ] && pass "vocab --size 3: exit 2" || fail "vocab --size 3: exit 2"

printf '[UNK]\na\nb\na\n' > "$work/dup.txt"
"$tool" tokenize --vocab "$work/dup.txt" < /dev/null > /dev/null 2> "$work/err"
st=$?
if [ $st -eq 1 ] && [ "$(cat "$work/err")" = "$work/dup.txt:4: error: duplicate token \"a\" (first on line 2)" ]; then
	pass "duplicate token: FILE:LINE message, exit 1"
else
	fail "duplicate token: exit $st, $(cat "$work/err")"
fi

cat > "$work/text.txt" <<'TEXT'
Hello, world! The world says hello.
Héllo again, WORLD; the worlds are many.
Tokenizers split words into word pieces.
TEXT
"$tool" vocab --quiet --size 60 --min-frequency 2 -o "$work/v1.txt" "$work/text.txt" &&
    "$tool" vocab --quiet --size 60 --min-frequency 2 -o "$work/v2.txt" - < "$work/text.txt"
if cmp -s "$work/v1.txt" "$work/v2.txt" &&
    [ "$(head -n 5 "$work/v1.txt" | tr '\n' ' ')" = "[PAD] [UNK] [CLS] [SEP] [MASK] " ]; then
	pass "vocab: specials first, the same file twice"
else
	fail "vocab: specials first, the same file twice"
fi
got=$(printf 'HELLO, Wörld!\n\nworlds\n' | "$tool" tokenize --tokens --vocab "$work/v1.txt" | tr '\n' '|')
if [ "$got" = "hello , world !||world ##s|" ]; then
	pass "tokenize --tokens: $got"
else
	fail "tokenize --tokens: $got"
fi
h1=$("$tool" tokenize --hash --vocab "$work/v1.txt")
h2=$(sha256sum "$work/v1.txt" | cut -d' ' -f1)
[ "$h1" = "$h2" ] && pass "--hash is the file's SHA-256" || fail "--hash $h1 != $h2"

sh "$top_srcdir/tests/trainer/realtext.sh" 6000 > "$work/real.txt"
"$tool" vocab --quiet --size 2000 -o "$work/real-vocab.txt" "$work/real.txt"
"$tool" tokenize --vocab "$work/real-vocab.txt" "$work/real.txt" > "$work/t1"
"$tool" tokenize --threads 3 --vocab "$work/real-vocab.txt" < "$work/real.txt" > "$work/t3"
if [ -s "$work/t1" ] && cmp -s "$work/t1" "$work/t3" &&
    [ "$(wc -l < "$work/t1")" -eq "$(wc -l < "$work/real.txt")" ]; then
	pass "tokenize: one line out per line in, same with 3 threads"
else
	fail "tokenize: one line out per line in, same with 3 threads"
fi
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do cat "$work/real.txt"; done > "$work/big.txt"
"$tool" vocab --quiet --size 3000 -o "$work/big1.txt" "$work/big.txt"
"$tool" vocab --quiet --size 3000 --threads 3 -o "$work/big3.txt" "$work/big.txt"
if [ "$(wc -c < "$work/big.txt")" -ge 4194304 ] && cmp -s "$work/big1.txt" "$work/big3.txt"; then
	pass "vocab: the same file with 1 and 3 counting threads"
else
	fail "vocab: the same file with 1 and 3 counting threads"
fi

{ echo hello; head -c 17000000 /dev/zero | tr '\0' a; } > "$work/longline.txt"
"$tool" vocab --quiet --size 100 -o "$work/v.txt" "$work/longline.txt" 2> "$work/err"
st=$?
if [ $st -eq 1 ] && [ "$(cat "$work/err")" = "$work/longline.txt:2: error: a line over 16 MiB (is this text?)" ] &&
    [ ! -e "$work/v.txt" ]; then
	pass "vocab: a line over 16 MiB refused with FILE:LINE"
else
	fail "vocab: long line: exit $st, $(cat "$work/err")"
fi
exit $failed
