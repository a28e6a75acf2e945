#!/bin/sh
# Timed checkpoints end to end on the local backend (issue 9), with the
# real agent and trainer: two configurations (batch 4 and 8) x two
# repeats, a checkpoint every minute of training, those at 1m and 2m
# evaluated on held-out shards after training. One run gets SIGUSR1 after
# its 1-minute checkpoint and is requeued: its 2-minute checkpoint is
# still at 2 minutes of training, not 1 minute after the resume.
#   - cadred records every timed checkpoint with its eval figures
#     (`cadre status RUN --json`), equal to the raw files (metrics.jsonl,
#     eval.jsonl) as tests/daemon/timed_check.py reads them;
#   - `cadre report --at 2m` gives the steps, samples, samples/s and
#     accuracy that timed_check.py recomputes from the raw files;
#   - `cadre export RUN --at 2m DIR` is a directory transformers loads;
#     `--final` exports the run's newest checkpoint
#     (where it is installed: tests/reference/setup.sh).
# Each step takes at least 400 ms (the trainer's --min-step-ms), so the
# 1- and 2-minute marks fall inside every run on any machine.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
[ -z "${CADRE_DISTCHECK_FAST:-}" ] ||
    skip "four minutes of training that make check ran (CADRE_DISTCHECK_FAST)"
TMPDIR=$work	# the jobs' Open MPI directories
export TMPDIR
check() {	# check WHAT GOT WANT
	if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: got '$2', want '$3'"; fi
}
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_programs
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
cleanup() {
	cadred_stop KILL
	rm -rf "$work"
}
trap cleanup EXIT
# Open MPI's allocations outlive MPI_Finalize: not ours to report.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS

use_min_step_ms 400

# Real text: the first lines to train on, the last to evaluate on.
sh "$top_srcdir/tests/trainer/realtext.sh" 9000 > "$work/all.txt"
head -n 7000 "$work/all.txt" > "$work/train.txt"
tail -n 2000 "$work/all.txt" > "$work/held.txt"
tr=$top_builddir/cadre-train
"$tr" vocab --quiet --size 2000 -o "$work/vocab.txt" "$work/train.txt" &&
"$tr" prep --quiet --vocab "$work/vocab.txt" --format text --task pretrain \
    --seq-len 32 --out "$work/shards" "$work/train.txt" &&
"$tr" prep --quiet --vocab "$work/vocab.txt" --format text --task pretrain \
    --seq-len 32 --out "$work/held" "$work/held.txt" ||
    { fail "vocab and shards"; exit 1; }

cat > "$work/timed.yaml" <<SPEC
version: 1
name: timed
scheduler: { backend: local, time_limit: 15m }
resources: { nodes: 1, ranks_per_node: 1, cpus_per_rank: 1 }
agent: { startup_timeout: 60s }
trainer:
  model: bert-tiny
  task: pretrain
  data: $work/shards
  vocab: $work/vocab.txt
  seq_len: 32
  batch_size: 8
  steps: 330
  checkpoint_every: 1m
  keep_checkpoints: 1
  log_every: 10
  optimizer: { lr: 5e-4 }
eval: { data: $work/held, batch_size: 16, at: [1m, 2m] }
measure: { skip_steps: 10 }
matrix: { trainer.batch_size: [4, 8] }
repeats: 2
retries: { max: 3, backoff: 0s }
SPEC
cadred_start
exp=$(cadre submit "$work/timed.yaml" 2>>"$work/d/cadred.log")
[ -n "$exp" ] || { fail "submit: $(tail -n 5 "$work/d/cadred.log")"; exit 1; }
runs=$(run_ids "$work/timed.yaml")
set -- $runs
[ $# -eq 4 ] || { fail "4 runs planned, got: $runs"; exit 1; }
victim=$1
vdir=$CADRE_STATE_DIR/runs/$victim

# SIGUSR1 to the victim's trainer some seconds after its 1-minute
# checkpoint: it checkpoints, exits 75, and the run is requeued.
has_mark() { grep -q '"event":"checkpoint".*"due_s":60' "$vdir/metrics.jsonl"; }
if wait_until 300 has_mark; then
	sleep 8
	pid=$(pgrep -f "^$top_builddir/cadre-train train --config $vdir/train.json" | head -n 1)
	if [ -n "$pid" ] && kill -USR1 "$pid"; then
		pass "SIGUSR1 to run $victim's trainer after its 1-minute checkpoint"
	else
		fail "no trainer process of run $victim"
	fi
else
	fail "run $victim: no 1-minute checkpoint in 300 s: $(tail -n 5 "$vdir/job.out" 2>/dev/null)"
fi

all_done() {
	for r in $runs; do
		case $(run_field "$r" state) in
		done|failed|cancelled) ;;
		*) return 1 ;;
		esac
	done
}
if wait_until 480 all_done; then
	pass "every run ended"
else
	fail "runs still going after 480 s"
fi
for r in $runs; do
	check "run $r done" "$(run_field "$r" state)" done
done
check "run $victim: two attempts" "$(run_field "$victim" attempts)" 2
check "run $victim: the first attempt ended preempted" \
    "$(sed -n 's/.*"reason": *"\([a-z_]*\)".*/\1/p' "$vdir/status.1.json" 2>/dev/null | head -n 1)" \
    preempted

# cadred's records against the raw files, the victim's training times,
# and the report at 2 minutes.
for r in $runs; do
	cadre status "$r" --json > "$work/status-$r.json" 2>>"$work/d/cadred.log"
done
cadre report "$exp" --at 2m --format json > "$work/report.json" \
    2> "$work/report.err" || fail "cadre report --at 2m: $(cat "$work/report.err")"
python3 "$top_srcdir/tests/daemon/timed_check.py" --at 120 \
    --victim "$victim" --report "$work/report.json" \
    $(for r in $runs; do echo "$CADRE_STATE_DIR/runs/$r:$work/status-$r.json"; done) ||
    failed=1
cadre status "$victim" > "$work/status.txt" 2>&1
if grep -q "^  2m " "$work/status.txt" && grep -q "^  1m " "$work/status.txt"; then
	pass "cadre status RUN lists the 1m and 2m checkpoints"
else
	fail "cadre status RUN: $(cat "$work/status.txt")"
fi
cadre report "$exp" --at 1m,2m --plot "$work/plots" > "$work/report.md" 2>&1 ||
    fail "cadre report --at 1m,2m (md): $(cat "$work/report.md")"
if grep -q "^## At 2m of training" "$work/report.md" &&
    grep -q "^## At 1m of training" "$work/report.md" &&
    python3 -c 'import sys, xml.dom.minidom as m; [m.parse(f) for f in sys.argv[1:]]' \
    "$work/plots/accuracy_vs_time.svg" "$work/plots/accuracy_vs_samples.svg"; then
	pass "report --at 1m,2m: two tables, and the accuracy plots parse as XML"
else
	fail "report --at md/plots: $(cat "$work/report.md")"
fi
for bad in 0 soon -1m; do
	cadre report "$exp" --at "$bad" > /dev/null 2> "$work/err"
	rc=$?
	if [ $rc -eq 2 ] && grep -q -- "--at '$bad'" "$work/err"; then
		pass "report --at $bad: exit 2, $(head -n 1 "$work/err")"
	else
		fail "report --at $bad: exit $rc: $(cat "$work/err")"
	fi
done
printf 'not json\n' >> "$vdir/eval.jsonl"
cadre report "$exp" --at 2m --format csv > "$work/report.csv" 2> "$work/err" &&
    grep -q "eval.jsonl:[0-9][0-9]*:" "$work/err" &&
    pass "a bad eval.jsonl line: a warning naming it ($(grep -c . "$work/report.csv") csv lines)" ||
    fail "bad eval.jsonl line: $(cat "$work/err")"

# Export, and transformers loading it.
if cadre export "$victim" --at 2m "$work/hf" > "$work/export.out" 2>&1; then
	pass "cadre export --at 2m: $(cat "$work/export.out")"
else
	fail "cadre export: $(cat "$work/export.out")"
fi
for f in config.json model.safetensors vocab.txt tokenizer_config.json; do
	[ -s "$work/hf/$f" ] || fail "export: no $f"
done
cadre export "$victim" --at 3m "$work/hf3" > "$work/export3.out" 2>&1
check "export --at 3m (none): exit 1" "$?" 1
grep -q "no timed checkpoint at 3m; recorded: 1m (step" "$work/export3.out" &&
    pass "export --at 3m says which times there are" ||
    fail "export --at 3m: $(cat "$work/export3.out")"
cadre export "$victim" --at 2m "$work/hf" > "$work/export4.out" 2>&1
check "export into a non-empty directory refused: exit 1" "$?" 1
cadre export "$victim" "$work/hf5" > "$work/export5.out" 2>&1
check "export without --at or --step: exit 2" "$?" 2
# the final checkpoint: checkpoints/latest's, verified as a timed one is
if cadre export "${victim%??????}" --final "$work/hf-final" > "$work/export6.out" 2>&1 &&
    [ -s "$work/hf-final/config.json" ] && [ -s "$work/hf-final/model.safetensors" ]; then
	pass "cadre export --final (by a start of the run id): $(cat "$work/export6.out")"
else
	fail "cadre export --final: $(cat "$work/export6.out")"
fi
if py=$(CADRE_NO_INSTALL=${CADRE_NO_INSTALL:-0} sh "$top_srcdir/tests/reference/setup.sh" 2>/dev/null) &&
    "$py" -c 'import transformers' 2>/dev/null; then
	"$py" "$top_srcdir/tests/trainer/hf_load.py" "$work/hf" --tokenizer || failed=1
else
	echo "note: transformers is not installed here: the exported dir was not loaded"
fi
exit $failed
