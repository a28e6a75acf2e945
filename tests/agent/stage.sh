#!/bin/sh
# Staging: 4 agents on 127.0.1.1-4 and `launch --stage SRC:DST/%n`: the
# tree arrives in each node's own directory with every checksum right; a
# later start skips it by the verification records alone (nothing hashed);
# a corrupted, a truncated and a missing copy are found and copied again
# while the rest is skipped; a change the metadata cannot show is found by
# --stage-verify full; a source that changed since the manifest fails and
# leaves nothing; two stagers of one target at once; without --keep-staged
# the copies are removed after the run; bad --stage arguments and a
# missing SRC are refused with the reason.
. "$top_srcdir/tests/agent/lib.sh"
if ! command -v mpirun >/dev/null || ! command -v sha256sum >/dev/null; then
	echo "$test_name: skipped: no mpirun or sha256sum"
	exit 77
fi

src=$work/src
mkdir -p "$src/sub/deeper" "$src/empty-dir"
head -c 3000000 /dev/urandom > "$src/big.bin"
echo hello > "$src/a.txt"
: > "$src/sub/empty"
head -c 70000 /dev/urandom > "$src/sub/deeper/c.bin"
chmod 0640 "$src/a.txt"
(cd "$src" && find . -type f | sort | xargs sha256sum) > "$work/sums"
nfiles=$(wc -l < "$work/sums")
local=$work/local

"$agent" keygen --run-dir "$rd" || fail "keygen"
start4() {
	rm -f "$rd/status.json"
	for i in 1 2 3 4; do start_agent "$rd" node$i 127.0.1.$i; done
}
stop4() {
	for i in 1 2 3 4; do eval "wait_exit 10 \$pid_node$i" || fail "agent node$i did not stop"; done
}
# run OPTIONS...: launch over the 4 agents with a command that checks the
# staged tree on its own node.
run() {
	# shellcheck disable=SC2086
	timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-4]' \
	    --startup-timeout 20s $mpi "$@" -- \
	    sh -c 'cd "$0/$CADRE_NODE/data" && sha256sum --quiet -c "$1"' \
	    "$local" "$work/sums" >"$work/out" 2>"$work/err"
}
# stat_field NAME: a number of status.json's "stage" object
stat_field() {
	sed -n "s/^ *\"$1\": \([0-9]*\).*/\1/p" "$rd/status.json" | head -n 1
}
verify_all() {
	for i in 1 2 3 4; do
		(cd "$local/node$i/data" && sha256sum --quiet -c "$work/sums") ||
		    fail "node$i: checksums after $1"
	done
}

start4
run --stage "$src:$local/%n/data" --keep-staged; rc=$?
[ $rc = 0 ] || fail "first run: status $rc: $(cat "$work/err")"
grep -q '"reason": "done"' "$rd/status.json" || fail "status.json: $(cat "$rd/status.json")"
grep -q '"stage_seconds": [0-9]' "$rd/status.json" || fail "no stage_seconds: $(cat "$rd/status.json")"
verify_all "the first run"
[ "$(stat_field copied)" = $((nfiles * 4)) ] || fail "copied $(stat_field copied), expected $((nfiles * 4))"
[ "$(stat_field skipped)" = 0 ] || fail "skipped $(stat_field skipped)"
[ "$(stat -c %a "$local/node2/data/a.txt")" = 640 ] || fail "mode not kept"
[ -d "$local/node1/data/sub/deeper" ] || fail "no sub/deeper"
ok "4 nodes: $nfiles files each arrive in the node's own directory, every checksum verified, stage_seconds in status.json"
stop4

# Nothing changed: the records vouch for every copy and the source.
start4
run --stage "$src:$local/%n/data" --keep-staged; rc=$?
[ $rc = 0 ] || fail "second run: status $rc: $(cat "$work/err")"
[ "$(stat_field skipped)" = $((nfiles * 4)) ] && [ "$(stat_field hashed)" = 0 ] ||
    fail "skipped $(stat_field skipped), hashed $(stat_field hashed): expected $((nfiles * 4)), 0"
[ -s "$rd/stage/0.src" ] && [ -s "$local/node1/data/.cadre-stage.node1.rec" ] || fail "no verification records"
ok "a later start skips every file by its verification record, hashing none"
stop4

# Corrupt node3's big.bin (same size), truncate node1's, drop node2's c.bin.
printf 'X' | dd of="$local/node3/data/big.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
truncate -s 1000000 "$local/node1/data/big.bin"
rm "$local/node2/data/sub/deeper/c.bin"
start4
run --stage "$src:$local/%n/data" --keep-staged; rc=$?
[ $rc = 0 ] || fail "third run: status $rc: $(cat "$work/err")"
verify_all "the third run"
[ "$(stat_field redone)" = 2 ] || fail "redone $(stat_field redone), expected 2: $(cat "$rd/status.json")"
[ "$(stat_field copied)" = 1 ] || fail "copied $(stat_field copied), expected 1"
[ "$(stat_field skipped)" = $((nfiles * 4 - 3)) ] || fail "skipped $(stat_field skipped)"
grep -q 'node3: .*big.bin differs' "$work/err" || fail "the corrupted copy is not named: $(cat "$work/err")"
grep -q 'node1: .*big.bin differs' "$work/err" || fail "the truncated copy is not named: $(cat "$work/err")"
ok "a corrupted copy on node3 and a truncated one on node1 are detected and copied again, a missing one on node2 copied, the rest skipped"
stop4

# node4's big.bin rewritten with other bytes of the same size and mtime,
# and its record line made to match (a change no metadata shows, as a
# disk's own corruption): the default trusts the record, --stage-verify
# full hashes every file and copies it again.
f4=$local/node4/data/big.bin
rec4=$local/node4/data/.cadre-stage.node4.rec
touch -r "$f4" "$work/stamp"
head -c 3000000 /dev/urandom > "$work/other" && cat "$work/other" > "$f4" && touch -r "$work/stamp" "$f4"
line=$(grep ' big.bin$' "$rec4") || fail "no big.bin in $rec4"
set -- $line
new="$1 $2 $3 $(stat -c '%.9Z' "$f4" | tr -d .) $(stat -c '%i %d' "$f4") big.bin"
grep -v ' big.bin$' "$rec4" > "$rec4.new" && echo "$new" >> "$rec4.new" && mv "$rec4.new" "$rec4"
start4
# shellcheck disable=SC2086
timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-4]' --startup-timeout 20s \
    $mpi --stage "$src:$local/%n/data" --keep-staged -- true >"$work/out" 2>"$work/err"; rc=$?
[ $rc = 0 ] && [ "$(stat_field redone)" = 0 ] || fail "meta run: status $rc, redone $(stat_field redone): $(cat "$work/err")"
cmp -s "$f4" "$work/other" || fail "the record vouching for node4's big.bin was not trusted"
stop4
start4
run --stage "$src:$local/%n/data" --keep-staged --stage-verify full; rc=$?
[ $rc = 0 ] || fail "--stage-verify full: status $rc: $(cat "$work/err")"
verify_all "--stage-verify full"
[ "$(stat_field redone)" = 1 ] && [ "$(stat_field hashed)" = $((nfiles * 4)) ] ||
    fail "--stage-verify full: redone $(stat_field redone), hashed $(stat_field hashed)"
grep -q 'node4: .*big.bin differs' "$work/err" || fail "node4's big.bin not named: $(cat "$work/err")"
ok "a copy changed behind its record (same size, mtime, ctime): trusted by default, found and copied again by --stage-verify full"
stop4

# cadre-agent stage by hand with the manifest of the last run: a source
# that no longer matches it (truncated, as during a copy) fails naming the
# file and leaves no copy behind; two stagers of one target at once both
# succeed, one copying, the other finding the copies.
man=$rd/stage/0.json
cp "$src/big.bin" "$work/big.saved"
truncate -s 2000000 "$src/big.bin"
"$agent" stage --node solo --manifest "$man" > "$work/solo.out" 2> "$work/solo.err"; rc=$?
[ $rc = 1 ] && grep -q "big.bin changed since the manifest" "$work/solo.err" ||
    fail "a truncated source: status $rc: $(cat "$work/solo.err")"
[ ! -e "$local/solo/data/big.bin" ] && [ -z "$(find "$local/solo" -name '?*.cadre-stage.solo.*')" ] ||
    fail "a truncated source left files: $(find "$local/solo")"
cp "$work/big.saved" "$src/big.bin"
"$agent" stage --node pair --manifest "$man" > "$work/pair1.out" 2> "$work/pair1.err" & p1=$!
"$agent" stage --node pair --manifest "$man" > "$work/pair2.out" 2> "$work/pair2.err"; rc2=$?
wait $p1; rc1=$?
[ $rc1 = 0 ] && [ $rc2 = 0 ] || fail "two stagers: status $rc1 $rc2: $(cat "$work/pair1.err" "$work/pair2.err")"
(cd "$local/pair/data" && sha256sum --quiet -c "$work/sums") || fail "two stagers: checksums"
copied=$(cat "$work/pair1.out" "$work/pair2.out" | sed -n 's/.*"copied": \([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s }')
[ "$copied" = "$nfiles" ] || fail "two stagers copied $copied files, expected $nfiles between them"
[ -z "$(find "$local/pair" -name '*.cadre-stage.pair.[0-9]*')" ] || fail "two stagers: temporary files left"
ok "a source truncated since the manifest fails, named, leaving nothing; two stagers of one target take turns, the tree arrives once and whole"
rm -rf "$local/solo" "$local/pair"

# Without --keep-staged: skipped again, then removed after the run.
echo keep > "$local/node1/data/not-ours"
start4
run --stage "$src:$local/%n/data"; rc=$?
[ $rc = 0 ] || fail "last run: status $rc: $(cat "$work/err")"
[ "$(stat_field skipped)" = $((nfiles * 4)) ] || fail "skipped $(stat_field skipped)"
for i in 2 3 4; do
	[ ! -e "$local/node$i/data" ] || fail "node$i: staged files left: $(find "$local/node$i")"
done
[ "$(cat "$local/node1/data/not-ours" 2>/dev/null)" = keep ] || fail "a file staging did not write was removed"
[ ! -e "$local/node1/data/big.bin" ] || fail "node1: big.bin left"
ok "a run that finds everything in place skips it all; without --keep-staged the copies (only they) are removed after"
stop4

# One DST for all 4 (one disk, as a DST on a shared file system): they
# copy side by side, and the tree arrives whole.
start4
# shellcheck disable=SC2086
timeout 120 "$agent" launch --run-dir "$rd" --nodes 'node[1-4]' --startup-timeout 20s \
    $mpi --stage "$src:$work/shared/data" --keep-staged -- true >"$work/out" 2>"$work/err"; rc=$?
[ $rc = 0 ] || fail "shared DST: status $rc: $(cat "$work/err")"
(cd "$work/shared/data" && sha256sum --quiet -c "$work/sums") || fail "shared DST: checksums"
[ -z "$(find "$work/shared" -name '*.cadre-stage.*' ! -name '.cadre-stage.*')" ] || fail "shared DST: temporary files left"
ok "4 nodes staging into one directory at once: the tree arrives whole, no temporary files left"
stop4

# Bad input.
"$agent" launch --run-dir "$rd" --nodes node1 --stage relative:/x -- true 2>"$work/err"; rc=$?
[ $rc = 2 ] && grep -q 'expected SRC:DST' "$work/err" || fail "relative SRC: status $rc: $(cat "$work/err")"
"$agent" launch --run-dir "$rd" --nodes node1 --stage /a:/b/%x -- true 2>"$work/err"; rc=$?
[ $rc = 2 ] && grep -q '%n is the node' "$work/err" || fail "bad %: status $rc: $(cat "$work/err")"
start4
run --stage "$work/nonexistent:$local/%n/data"; rc=$?
[ $rc = 1 ] || fail "missing SRC: status $rc"
grep -q '"reason": "failed"' "$rd/status.json" && grep -q 'nonexistent' "$rd/status.json" ||
    fail "missing SRC: status.json: $(cat "$rd/status.json")"
ok "bad --stage words exit 2 with the fix; a missing SRC fails the run (status.json names it)"
stop4
exit 0
