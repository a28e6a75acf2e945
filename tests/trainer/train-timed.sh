#!/bin/sh
# Timed checkpoints (docs/contracts.md, docs/trainer.md "Timed checkpoints"):
# with --checkpoint-every 2 and steps of at least 100 ms (--min-step-ms),
# a run stopped between marks (--stop-after, exit 75) and resumed keeps
# its marks at multiples of 2 s of training time, each checkpoint taken
# within a step of its mark; --keep-timed keeps every timed checkpoint
# while --keep 1 prunes the others, and without it they go; `eval
# --run-dir` writes one eval.jsonl line per timed checkpoint, --at picks,
# a second call adds nothing, a corrupted checkpoint gets an error line
# and exit 1; bad usage and a bad eval.jsonl exit 2 with a message.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
make_shards "$work/shards"

# checkpoint events' "due_s elapsed_s step" of a run dir
marks() {
	sed -n 's/.*"event":"checkpoint","step":\([0-9]*\),"elapsed_s":\([0-9.e+-]*\),.*"due_s":\([0-9.e+-]*\),.*/\3 \2 \1/p' \
	    "$1/metrics.jsonl"
}

write_cfg "$work/t.json" "$work/shards" "$work/t" steps 90 checkpoint_every 2 \
    keep_checkpoints 1 keep_timed true
"$tool" train --config "$work/t.json" --quiet --min-step-ms 100 --stop-after 33
check_rc=$?
[ $check_rc -eq 75 ] && pass "stopped after step 33: exit 75" ||
    fail "--stop-after 33: exit $check_rc, want 75"
"$tool" train --config "$work/t.json" --quiet --min-step-ms 100 ||
    fail "the resumed run: exit $?"
marks "$work/t" > "$work/marks"
n=$(wc -l < "$work/marks")
if [ "$n" -ge 3 ] && awk '
	{ if ($1 % 2 != 0 || $2 < $1 || $2 >= $1 + 1 || $1 <= last) bad = 1; last = $1 }
	END { exit bad }' "$work/marks"; then
	pass "$n timed checkpoints, due at multiples of 2 s, each within a step of its mark: $(awk '{ printf "%s@%.2f ", $1, $2 }' "$work/marks")"
else
	fail "timed marks (due elapsed step): $(cat "$work/marks")"
fi
# the resume came between marks: the first mark after it is the next multiple
resumed=$(sed -n 's/.*"event":"start","time":[0-9.e+]*,"step":\([0-9]*\),.*/\1/p' "$work/t/metrics.jsonl" | tail -n 1)
[ "$resumed" = 33 ] && pass "the second attempt resumed at step 33" ||
    fail "resumed at '$resumed'"
after=$(awk -v s=33 '$3 > s { print $1; exit }' "$work/marks")
before=$(awk -v s=33 '$3 <= s { d = $1 } END { print d }' "$work/marks")
if [ -n "$after" ] && [ -n "$before" ] && [ "$after" = $((before + 2)) ]; then
	pass "the first mark after the resume is the next multiple: $before then $after"
else
	fail "marks around the resume: before '$before', after '$after'"
fi
# every timed one kept, the other (the signal's) pruned by --keep 1
kept=$(ls "$work/t/checkpoints" | grep -c '^step-')
[ "$kept" -eq "$((n + 1))" ] && pass "keep_timed: the $n timed checkpoints and the final one kept" ||
    fail "keep_timed: $kept step dirs for $n timed ones: $(ls "$work/t/checkpoints")"
grep -l '"due_s"' "$work"/t/checkpoints/step-*/meta.json > /dev/null &&
    pass "meta.json carries due_s" || fail "no due_s in meta.json"

write_cfg "$work/u.json" "$work/shards" "$work/u" steps 50 checkpoint_every 2 \
    keep_checkpoints 1
"$tool" train --config "$work/u.json" --quiet --min-step-ms 100 || fail "u: exit $?"
kept=$(ls "$work/u/checkpoints" | grep -c '^step-')
[ "$kept" -eq 1 ] && pass "without keep_timed, --keep 1 keeps one" ||
    fail "without keep_timed: $(ls "$work/u/checkpoints")"

# eval --run-dir
"$tool" eval --run-dir "$work/t" --data "$work/shards" --batch 4 --at 2,4 \
    > "$work/e1.out" 2>&1 || fail "eval --at 2,4: exit $?: $(cat "$work/e1.out")"
lines=$(wc -l < "$work/t/eval.jsonl")
[ "$lines" -eq 2 ] && pass "eval --at 2,4: two lines" || fail "eval --at 2,4: $lines lines"
if python3 - "$work/t/eval.jsonl" "$work/marks" <<'PY'
import json, sys
marks = {float(l.split()[0]): int(l.split()[2]) for l in open(sys.argv[2])}
for l in open(sys.argv[1]):
    o = json.loads(l)
    need = ["step", "due_s", "elapsed_s", "samples", "path", "task", "loss", "accuracy",
            "sequences", "mlm_loss", "mlm_acc", "nsp_loss", "nsp_acc", "masked"]
    miss = [k for k in need if k not in o]
    if miss or marks.get(o["due_s"]) != o["step"] or not 0 <= o["accuracy"] <= 1 \
            or o["loss"] != o["mlm_loss"] or o["path"] != "checkpoints/step-%d" % o["step"]:
        print("bad line %s (missing %s)" % (l.strip(), miss))
        sys.exit(1)
PY
then pass "eval lines: step and due_s of the checkpoint, figures, path"
else fail "eval lines: $(cat "$work/t/eval.jsonl")"
fi
"$tool" eval --run-dir "$work/t" --data "$work/shards" --batch 4 --at 2,4 > /dev/null 2>&1
[ "$(wc -l < "$work/t/eval.jsonl")" -eq 2 ] && pass "a second eval --at 2,4 adds nothing" ||
    fail "a second eval added lines"
# corrupt one not yet evaluated: its line says why, exit 1, others evaluated
last=$(tail -n 1 "$work/marks" | awk '{ print $3 }')
printf 'x' | dd of="$work/t/checkpoints/step-$last/model.safetensors" bs=1 seek=100 conv=notrunc 2> /dev/null
"$tool" eval --run-dir "$work/t" --data "$work/shards" --batch 4 > "$work/e2.out" 2>&1
check_rc=$?
[ $check_rc -eq 1 ] && pass "a corrupted checkpoint: exit 1" || fail "corrupted: exit $check_rc"
grep -q "\"step\":$last,.*\"error\":\"" "$work/t/eval.jsonl" &&
    pass "its line has an error: $(grep "\"step\":$last," "$work/t/eval.jsonl" | sed 's/.*"error"/"error"/')" ||
    fail "no error line for step $last: $(cat "$work/t/eval.jsonl")"
total=$(wc -l < "$work/t/eval.jsonl")
[ "$total" -eq "$n" ] && pass "every timed checkpoint has a line ($n)" ||
    fail "$total lines for $n timed checkpoints"

# bad usage and bad input
"$tool" eval --run-dir "$work/t" --init "$work/t/checkpoints/step-2" --data "$work/shards" 2> "$work/err"
[ $? -eq 2 ] && pass "--run-dir with --init: exit 2" || fail "--run-dir with --init"
"$tool" eval --run-dir "$work/t" --data "$work/shards" --at 0 2> "$work/err"
[ $? -eq 2 ] && grep -q -- "--at: '0'" "$work/err" && pass "--at 0: exit 2, $(cat "$work/err")" ||
    fail "--at 0: $(cat "$work/err")"
"$tool" eval --run-dir "$work/nope" --data "$work/shards" 2> "$work/err"
[ $? -eq 2 ] && grep -q "nope/checkpoints" "$work/err" && pass "a missing run dir: exit 2" ||
    fail "missing run dir: $(cat "$work/err")"
printf '{"step": 2}\nnot json\n' > "$work/bad.jsonl"
"$tool" eval --run-dir "$work/t" --data "$work/shards" --out "$work/bad.jsonl" 2> "$work/err"
[ $? -eq 2 ] && grep -q "bad.jsonl:2:" "$work/err" && pass "a bad eval.jsonl line: exit 2 naming file:line" ||
    fail "bad eval.jsonl: $(cat "$work/err")"
exit $failed
