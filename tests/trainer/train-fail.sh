#!/bin/sh
# `cadre-train train` when things go wrong: SIGKILL in the middle of a
# checkpoint write (the previous one loads, and the resumed run is exact),
# a disk that fills during checkpoints (root only: a small tmpfs; training
# goes on, exit 74 after 3 failures in a row), a corrupt newest checkpoint
# (warning, a checkpoint_skipped event, fallback), every checkpoint corrupt
# (exit 2), a checkpoint of another model size (exit 2 naming both), a
# model over the memory limit (exit 3), bad train.json files (exit 2
# naming the key), and a shard corrupted behind its verification record
# (opened lazily, refused before a step, named).
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
make_shards "$work/shards"

write_cfg "$work/ref.json" "$work/shards" "$work/ref" steps 10
"$tool" train --config "$work/ref.json" --quiet || fail "reference run"

# --- SIGKILL while step-8 is being written
write_cfg "$work/k.json" "$work/shards" "$work/k" steps 10
"$tool" train --config "$work/k.json" --quiet --stop-after 5
CADRE_TRAIN_TEST_SLOW_WRITE=2000 "$tool" train --config "$work/k.json" --quiet \
    --stop-after 8 2> /dev/null & pid=$!
i=0
until [ -d "$work/k/checkpoints/.tmp-step-8" ] || [ $i -gt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill -KILL $pid
wait $pid 2> /dev/null; st=$?
[ $st -eq 137 ] && [ "$(cat "$work/k/checkpoints/latest")" = "step-5" ] &&
    pass "SIGKILL during the step-8 write: latest still step-5" ||
    fail "SIGKILL during the write: exit $st, latest $(cat "$work/k/checkpoints/latest")"
"$tool" train --config "$work/k.json" --quiet 2> "$work/err"; st=$?
[ $st -eq 0 ] && grep -q '"event":"start",.*"step":5,"resumed_from":"checkpoints/step-5"' \
    "$work/k/metrics.jsonl" && pass "resumed from step-5 after the kill" ||
    fail "resume after the kill: exit $st $(cat "$work/err")"
[ ! -e "$work/k/checkpoints/.tmp-step-8" ] && pass "the partial .tmp-step-8 is gone" ||
    fail ".tmp-step-8 left behind"
cmp -s "$work/ref/checkpoints/step-10/model.safetensors" \
    "$work/k/checkpoints/step-10/model.safetensors" &&
    pass "final weights bitwise equal to the uninterrupted run" ||
    fail "final weights differ from the uninterrupted run"

# --- the newest checkpoint corrupt: warning, fallback to the previous
write_cfg "$work/c.json" "$work/shards" "$work/c" steps 10
"$tool" train --config "$work/c.json" --quiet --stop-after 5
"$tool" train --config "$work/c.json" --quiet --stop-after 8
printf 'X' | dd of="$work/c/checkpoints/step-8/model.safetensors" bs=1 seek=200 \
    conv=notrunc 2> /dev/null
"$tool" train --config "$work/c.json" --quiet 2> "$work/err"; st=$?
if [ $st -eq 0 ] && grep -q 'step-8.*model.safetensors: SHA-256 .* does not match' "$work/err" &&
    grep -q '"event":"start",.*"step":5,"resumed_from":"checkpoints/step-5"' "$work/c/metrics.jsonl" &&
    [ -d "$work/c/checkpoints/.corrupt-step-8" ]; then
	pass "corrupt step-8: warned, resumed from step-5, set aside"
else
	fail "corrupt step-8: exit $st $(cat "$work/err")"
fi
# the fallback on the record: before the attempt's start line
sed -n '/"event":"checkpoint_skipped"/,$p' "$work/c/metrics.jsonl" | sed -n 2p > "$work/next"
grep -q '^{"event":"checkpoint_skipped","path":"checkpoints/step-8","why":".*step-8/model.safetensors: SHA-256 [0-9a-f.]* does not match meta.json' \
    "$work/c/metrics.jsonl" && grep -q '"event":"start",.*"resumed_from":"checkpoints/step-5"' "$work/next" &&
    pass "metrics.jsonl: checkpoint_skipped for step-8, then start resumed_from step-5" ||
    fail "no checkpoint_skipped event before the start: $(grep skipped "$work/c/metrics.jsonl")"
cmp -s "$work/ref/checkpoints/step-10/model.safetensors" \
    "$work/c/checkpoints/step-10/model.safetensors" &&
    pass "after the fallback: final weights equal the uninterrupted run" ||
    fail "after the fallback: final weights differ"

# --- every checkpoint corrupt: exit 2, nothing trained
write_cfg "$work/z.json" "$work/shards" "$work/z" steps 10
"$tool" train --config "$work/z.json" --quiet --stop-after 5
printf '{' > "$work/z/checkpoints/step-5/meta.json"
"$tool" train --config "$work/z.json" --quiet 2> "$work/err"; st=$?
[ $st -eq 2 ] && grep -q 'none of the 1 checkpoints verifies' "$work/err" &&
    pass "all checkpoints corrupt: exit 2, $(tail -n 1 "$work/err" | cut -c1-60)..." ||
    fail "all corrupt: exit $st $(cat "$work/err")"
"$tool" train --config "$work/z.json" --quiet --resume none --steps 2 2> "$work/err"; st=$?
[ $st -eq 0 ] && pass "--resume none starts afresh beside them" || fail "--resume none: exit $st"

# --- a checkpoint of another model size
write_cfg "$work/m.json" "$work/shards" "$work/m" steps 4
"$tool" train --config "$work/m.json" --quiet
write_cfg "$work/m2.json" "$work/shards" "$work/m" steps 6 \
    model '{"layers": 2, "hidden": 64, "heads": 2, "intermediate": 64, "vocab_size": 128, "max_position": 64}'
"$tool" train --config "$work/m2.json" --quiet 2> "$work/err"; st=$?
[ $st -eq 2 ] && grep -q "model is L2 H32 A2 I64 V128 P64 but this run's is L2 H64 A2 I64 V128 P64" "$work/err" &&
    pass "another model size: exit 2 naming both" || fail "another size: exit $st $(cat "$work/err")"

# --- a disk that fills during checkpoints (a 3 MiB tmpfs; root only).
# Timed checkpoints every second, steps of 300 ms: the first that fails is
# an error event and training goes on, step-5 intact; space is freed when
# that event appears, and the next ones are written. Then a full disk at
# the final checkpoint: written again twice, and after the third failure
# in a row exit 74 (io), the last checkpoint intact.
if [ "$(id -u)" -eq 0 ] && mkdir "$work/tmpfs" && mount -t tmpfs -o size=3m tmpfs "$work/tmpfs" 2> /dev/null; then
	trap 'umount "$work/tmpfs" 2> /dev/null; rm -rf "$work"' EXIT
	fd="$work/tmpfs/f"
	write_cfg "$work/f.json" "$work/shards" "$fd" steps 20
	"$tool" train --config "$work/f.json" --quiet --stop-after 5
	dd if=/dev/zero of="$work/tmpfs/fill" bs=64k 2> /dev/null
	truncate -s -64k "$work/tmpfs/fill"
	"$tool" train --config "$work/f.json" --quiet --checkpoint-every 1 \
	    --min-step-ms 300 2> "$work/err" & pid=$!
	wait_for 30 grep -q '"event":"error","kind":"io"' "$fd/metrics.jsonl"
	cat "$fd/checkpoints/latest" > "$work/latest-then"
	ls -a "$fd/checkpoints" > "$work/ls-then"
	sed -n 's/.*"model.safetensors": "\([0-9a-f]*\)".*/\1/p' "$fd/checkpoints/step-5/meta.json" \
	    > "$work/sum-meta"
	sha256sum < "$fd/checkpoints/step-5/model.safetensors" | cut -d' ' -f1 > "$work/sum-then"
	rm -f "$work/tmpfs/fill"
	wait $pid; st=$?
	after=$(sed -n '/"event":"error","kind":"io"/,$p' "$fd/metrics.jsonl" | grep -c '"event":"step"')
	if [ $st -eq 0 ] && grep -q 'No space left on device' "$work/err" &&
	    grep -q '"event":"error","kind":"io","message":".*No space left on device' "$fd/metrics.jsonl" &&
	    [ "$(cat "$work/latest-then")" = "step-5" ] && cmp -s "$work/sum-meta" "$work/sum-then" &&
	    ! grep -q '^\.tmp-' "$work/ls-then" && [ "$after" -gt 0 ] &&
	    grep -q '"event":"checkpoint","step":[0-9]*,.*"reason":"timed"' "$fd/metrics.jsonl" &&
	    [ "$(cat "$fd/checkpoints/latest")" = "step-20" ]; then
		pass "disk full at a timed checkpoint: error event, step-5 intact, $after steps went on, later checkpoints written, exit 0"
	else
		fail "disk full: exit $st, latest then $(cat "$work/latest-then"), $after steps after: $(cat "$work/err")"
	fi
	write_cfg "$work/f.json" "$work/shards" "$fd" steps 24
	dd if=/dev/zero of="$work/tmpfs/fill" bs=64k 2> /dev/null
	"$tool" train --config "$work/f.json" --quiet 2> "$work/err"; st=$?
	n=$(sed -n '/"event":"start",.*"step":20,/,$p' "$fd/metrics.jsonl" | grep -c '"event":"error","kind":"io"')
	if [ $st -eq 74 ] && [ "$n" -eq 3 ] && grep -q 'failed (3 in a row)' "$work/err" &&
	    [ "$(cat "$fd/checkpoints/latest")" = "step-20" ] &&
	    [ -z "$(find "$fd/checkpoints" -name '.tmp-*')" ]; then
		pass "disk full at the final checkpoint: written 3 times, then exit 74 (io), step-20 intact"
	else
		fail "3 failures: exit $st, $n error events, latest $(cat "$fd/checkpoints/latest"): $(cat "$work/err")"
	fi
	rm -f "$work/tmpfs/fill"
	"$tool" train --config "$work/f.json" --quiet 2> "$work/err"; st=$?
	[ $st -eq 0 ] && [ "$(cat "$fd/checkpoints/latest")" = "step-24" ] &&
	    pass "space freed: resumed from step-20 and finished" ||
	    fail "after freeing space: exit $st $(cat "$work/err")"
	umount "$work/tmpfs"
else
	echo "SKIP: disk-full cases (need root to mount a tmpfs)"
fi

# --- a model that cannot fit the memory limit: exit 3 and an oom line
CADRE_TRAIN_TEST_MEMORY_LIMIT=1000000 "$tool" train --config "$work/ref.json" \
    --out "$work/oom" --quiet 2> "$work/err"; st=$?
[ $st -eq 3 ] && grep -q '"event":"error","kind":"oom","message":"out of memory: the model' \
    "$work/oom/metrics.jsonl" && pass "over the memory limit: exit 3, oom line" ||
    fail "memory limit: exit $st $(cat "$work/err")"

# --- bad train.json
bad() {
	printf '%s\n' "$1" > "$work/bad.json"
	"$tool" train --config "$work/bad.json" --quiet 2> "$work/err"; st=$?
	if [ $st -eq 2 ] && grep -q -- "$2" "$work/err"; then
		pass "bad train.json: $2"
	else
		fail "bad train.json $1: exit $st $(cat "$work/err")"
	fi
}
bad '{"version": 1, "stpes": 10}' "unknown key 'stpes' (did you mean 'steps'?)"
bad '{"version": 2, "whatever": 1}' "version 2 is newer than this cadre-train reads (1)"
bad '{"steps": "ten"}' "key 'steps': expected an integer in 1..1000000000000"
bad '{"optimizer": {"name": "sgd"}}' "key 'optimizer.name': expected one of \"adamw\", \"lamb\""
bad '{"data": "relative/dir"}' "key 'data': 'relative/dir' is not an absolute path"
bad '{"steps": 1,
  "steps": 2}' "key 'steps' appears twice"
bad '{"steps": 1' "bad.json:2:1: error: expected ',' or '}'"
bad '{"model": {"layers": 2}}' "key 'model': 'hidden' is missing"
bad "{\"model\": \"bert-huge\", \"data\": \"$work/shards\", \"out\": \"$work/o\"}" "unknown preset 'bert-huge'"
bad "{\"precision\": \"bf16\", \"data\": \"$work/shards\", \"out\": \"$work/o\"}" "the CPU trainer computes in fp32 only"
"$tool" train --data "$work/shards" --out "$work/o2" --seq 64 --quiet 2> "$work/err"; st=$?
[ $st -eq 2 ] && grep -q "sequences of 32 tokens, but seq_len is 64" "$work/err" &&
    pass "--seq 64 on 32-token shards: exit 2" || fail "--seq mismatch: exit $st $(cat "$work/err")"

# A byte of the shard flipped and its verification record made to match
# the file again (a change no metadata shows, as a disk's own corruption):
# the set opens by its record, and the first read of the shard, which
# waits for its verification, stops the run before any step.
cp -r "$work/shards" "$work/rot"
rm "$work/rot/verified.rec"
"$tool" prep --info "$work/rot" > /dev/null 2>&1 || fail "prep --info of a copy"
[ -s "$work/rot/verified.rec" ] && pass "the first full check of a copied set writes verified.rec" ||
    fail "no verified.rec after the first open"
s0=$work/rot/shard-00000.bin
off=$(( $(wc -c < "$s0") / 2 ))
old=$(od -An -tu1 -j $off -N 1 "$s0" | tr -d ' ')
printf "$(printf '\\%03o' $(( (old + 1) % 256 )))" | dd of="$s0" bs=1 seek=$off conv=notrunc 2>/dev/null
line=$(grep ' shard-00000.bin$' "$work/rot/verified.rec")
set -- $line
grep -v ' shard-00000.bin$' "$work/rot/verified.rec" > "$work/rec.new"
echo "$1 $2 $(stat -c '%.9Y' "$s0" | tr -d .) $(stat -c '%.9Z' "$s0" | tr -d .) $(stat -c '%i %d' "$s0") shard-00000.bin" >> "$work/rec.new"
mv "$work/rec.new" "$work/rot/verified.rec"
"$tool" prep --info "$work/rot" > /dev/null 2>&1 && pass "a shard its record vouches for opens without its checksum" ||
    fail "prep --info trusted nothing"
"$tool" prep --info "$work/rot" --verify full > /dev/null 2> "$work/err"; st=$?
[ $st -eq 2 ] && grep -q "$s0: checksum mismatch" "$work/err" &&
    pass "prep --info --verify full finds the flipped byte" || fail "--verify full: exit $st $(cat "$work/err")"
write_cfg "$work/rot.json" "$work/rot" "$work/rot-out" steps 5
"$tool" train --config "$work/rot.json" --quiet 2> "$work/err"; st=$?
[ $st -ne 0 ] && grep -q "reading the next batch failed: $s0: checksum mismatch" "$work/err" &&
    ! grep -q '"event":"step"' "$work/rot-out/metrics.jsonl" &&
    pass "training on it stops before the first step, naming the shard (exit $st)" ||
    fail "training on a corrupt shard: exit $st $(cat "$work/err")"
exit $failed
