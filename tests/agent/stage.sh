#!/bin/sh
# Acceptance (issue 10, staging): 4 agents on 127.0.1.1-4 and `launch
# --stage SRC:DST/%n`: the tree arrives in each node's own directory with
# every checksum right; a corrupted and a missing copy are found and
# copied again while the rest is skipped; without --keep-staged the copies
# are removed after the run; bad --stage arguments and a missing SRC are
# refused with the reason.
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

# Corrupt node3's big.bin (same size), drop node2's c.bin.
printf 'X' | dd of="$local/node3/data/big.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null
rm "$local/node2/data/sub/deeper/c.bin"
start4
run --stage "$src:$local/%n/data" --keep-staged; rc=$?
[ $rc = 0 ] || fail "second run: status $rc: $(cat "$work/err")"
verify_all "the second run"
[ "$(stat_field redone)" = 1 ] || fail "redone $(stat_field redone), expected 1: $(cat "$rd/status.json")"
[ "$(stat_field copied)" = 1 ] || fail "copied $(stat_field copied), expected 1"
[ "$(stat_field skipped)" = $((nfiles * 4 - 2)) ] || fail "skipped $(stat_field skipped)"
grep -q 'node3: .*big.bin differs' "$work/err" || fail "the corrupted copy is not named: $(cat "$work/err")"
ok "a corrupted copy on node3 is detected and copied again, a missing one on node2 copied, the rest skipped"
stop4

# Without --keep-staged: skipped again, then removed after the run.
echo keep > "$local/node1/data/not-ours"
start4
run --stage "$src:$local/%n/data"; rc=$?
[ $rc = 0 ] || fail "third run: status $rc: $(cat "$work/err")"
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
[ -z "$(find "$work/shared" -name '*.cadre-stage*')" ] || fail "shared DST: temporary files left"
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
