#!/bin/sh
# after: under cadred with the local backend, the real agents and the
# fake trainer (tests/daemon/cadred-fake-trainer): an experiment's runs
# wait until every run of the one it names is done; a failed dependency
# fails them with the way out; an unknown name, the experiment itself and
# a cycle are refused at submit (and at rerun --spec).
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_agent

spec() {	# NAME SEED [AFTER]
	cat <<SPEC
version: 1
name: $1
${3:+after: [$3]}
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer: { model: bert-tiny, data: /nonexistent, steps: 8, seed: $2 }
measure: { skip_steps: 0 }
SPEC
}
refused() {	# WHAT PATTERN COMMAND...
	_what=$1 _pat=$2
	shift 2
	"$@" > "$work/out" 2> "$work/err"
	_rc=$?
	if [ $_rc -ne 0 ] && grep -q "$_pat" "$work/err"; then
		pass "refused: $_what"
	else
		fail "$_what: exit $_rc: $(cat "$work/err")"
	fi
}
cadred_start

spec fine-tune 2 pretrain > "$work/ft.yaml"
refused "after: an experiment not recorded" "after: no experiment 'pretrain'" cadre submit "$work/ft.yaml"
spec selfish 3 selfish > "$work/self.yaml"
refused "after: the experiment itself" "after: 'selfish' is this experiment itself" cadre submit "$work/self.yaml"

# pretrain trains a few seconds; fine-tune waits for it
echo "w4" > "$work/ctl/mode-1"
spec pretrain 1 > "$work/pt.yaml"
pt=$(cadre submit "$work/pt.yaml" 2>/dev/null)
ft=$(cadre submit "$work/ft.yaml" 2>/dev/null)
rpt=$(run_ids "$work/pt.yaml")
rft=$(run_ids "$work/ft.yaml")
waiting() { cadre status "$rft" | grep -q " new .*waiting for experiment $pt (pretrain) to be done"; }
if wait_until 30 waiting && [ "$(run_field "$rpt" state)" != done ]; then
	pass "fine-tune waits while pretrain runs (its reason says so)"
else
	fail "not waiting: $(cadre status "$rft"; cadre status "$rpt")"
fi
if wait_run 90 "$rft" done; then
	start_ft=$(sed -n 's/^{"event": "start", "time": \([0-9]*\),.*/\1/p' "$CADRE_STATE_DIR/runs/$rft/metrics.jsonl")
	end_pt=$(stat -c %Y "$CADRE_STATE_DIR/runs/$rpt/status.json")
	if [ "$start_ft" -ge "$end_pt" ]; then
		pass "fine-tune started after pretrain was done, and is done"
	else
		fail "fine-tune started at $start_ft, before pretrain ended at $end_pt"
	fi
else
	fail "fine-tune: $(cadre status "$rft")"
fi

# trainer.init.from: waits as after: does, then starts from the final
# checkpoint of pretrain's done run
cat > "$work/init.yaml" <<SPEC
version: 1
name: from-pretrain
scheduler: { backend: local, time_limit: 5m }
agent: { startup_timeout: 30s }
trainer:
  model: bert-tiny
  data: /nonexistent
  steps: 8
  seed: 4
  init: { from: pretrain, at: final }
measure: { skip_steps: 0 }
SPEC
cadre submit "$work/init.yaml" > /dev/null 2>&1
rin=$(run_ids "$work/init.yaml")
if wait_run 60 "$rin" done &&
    [ "$(cat "$CADRE_STATE_DIR/runs/$rin/fake-init")" = "$CADRE_STATE_DIR/runs/$rpt/checkpoints/step-8" ]; then
	pass "trainer.init.from: the run started from pretrain's final checkpoint"
else
	fail "init.from: $(cadre status "$rin"; cat "$CADRE_STATE_DIR/runs/$rin/fake-init" 2>&1)"
fi
sed 's/at: final/at: 20m/; s/from-pretrain/from-pretrain-20m/; s/seed: 4/seed: 8/' "$work/init.yaml" > "$work/init20.yaml"
cadre submit "$work/init20.yaml" > /dev/null 2>&1
rin20=$(run_ids "$work/init20.yaml")
if wait_run 30 "$rin20" failed &&
    cadre status "$rin20" | grep -q "trainer.init.from $pt: run $rpt has no checkpoint at 20m"; then
	pass "trainer.init.from at a time with no checkpoint: the run fails, saying so"
else
	fail "init.from at 20m: $(cadre status "$rin20")"
fi

# a cycle through a changed spec: pretrain after fine-tune
spec pretrain 1 fine-tune > "$work/pt2.yaml"
refused "a cycle at rerun --spec" "after: a cycle: $pt -> $ft -> $pt" cadre rerun --all --spec "$work/pt2.yaml" "$pt"

# a dependency that failed: the waiting runs fail, saying what to do
echo "1" > "$work/ctl/mode-5"
spec broken 5 > "$work/b.yaml"
spec downstream 6 broken > "$work/d.yaml"
b=$(cadre submit "$work/b.yaml" 2>/dev/null)
cadre submit "$work/d.yaml" > /dev/null 2>&1
rd=$(run_ids "$work/d.yaml")
if wait_run 60 "$rd" failed &&
    cadre status "$rd" | grep -q "after: experiment $b (broken) has 1 run failed or cancelled (cadre rerun $b, then cadre rerun"; then
	pass "a failed dependency fails the waiting run, with the way out"
else
	fail "failed dependency: $(cadre status "$rd")"
fi

# cancel without cadred: from here, in the state directory; a done run
# stays done
cadred_stop TERM
if cadre cancel "$ft" > "$work/out" 2> "$work/err" &&
    grep -qx "cancelled 0 runs (cadred is not running)" "$work/out" &&
    [ "$(run_field "$rft" state)" = done ]; then
	pass "cancel without cadred: from here, nothing done undone"
else
	fail "cancel without cadred: $(cat "$work/out" "$work/err")"
fi
exit $failed
