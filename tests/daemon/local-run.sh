#!/bin/sh
# The local backend end to end: the job script rendered for hostile values
# passes bash -n; a 2-node run (agents on 127.0.3.1-2, real launch and
# mpirun, a fake trainer) ends done with both ranks in job.out; a job
# outlives the schedtool that submitted it and a fresh one polls and finds
# it; cancel ends it (cancelled) with every process gone.
. "$top_srcdir/tests/daemon/local-lib.sh"

# Rendering: hostile values, bash -n, the run dir read back.
rd_h="$work/run it's \$(touch $work/pwned) \`touch $work/pwned\`"
if "$tool" render local "$templates" "$top_srcdir/tests/daemon/specs/hostile.yaml" \
    0 "$rd_h" "$work/h.sh" 2>"$work/err" && bash -n "$work/h.sh" 2>>"$work/err"; then
	got=$(sed -n '/^run_id=/,/^startup_timeout=/p' "$work/h.sh" |
		bash -c '. /dev/stdin; printf "%s" "$run_dir"')
	if [ "$got" = "$rd_h" ] && [ ! -e "$work/pwned" ] &&
	    ! grep -q '@[A-Z_]*@' "$work/h.sh"; then
		pass "local.sh.in rendered for hostile values: bash -n, run dir read back"
	else
		fail "local.sh.in: run dir read back as '$got'"
	fi
else
	fail "render local: $(cat "$work/err")"
fi

rd=$(newrun ok) || fatal "mkdir"
"$tool" train-json "$spec" 0 "$rd" "$rd/train.json" || fail "train-json"
grep -q '"out": "'"$rd"'"' "$rd/train.json" && grep -q '"resume": "auto"' "$rd/train.json" &&
	grep -q '"model": "bert-tiny"' "$rd/train.json" ||
	fail "train.json: $(cat "$rd/train.json")"
id=$(submit "$rd") || fatal "submit"
case $id in
local-[0-9]*-[0-9]*) ;;
*) fatal "job id '$id'" ;;
esac
line=$(wait_state 60 "$id" "done") || fatal "2-node run: $line; job.out: $(cat "$rd/job.out")"
for r in 0 1; do
	grep -q "^\[rank $r node$((r + 1))\] rank $r of 2: train --config $rd/train.json\$" "$rd/job.out" ||
		fatal "rank $r not in job.out: $(cat "$rd/job.out")"
done
grep -q '"reason": "done"' "$rd/status.json" || fail "status.json: $(cat "$rd/status.json")"
grep -q '127.0.3.2 slots=1' "$rd/hostfile" || fail "hostfile: $(cat "$rd/hostfile")"
[ "$line" = "$id done 0 0 exited 0" ] || fail "poll line '$line'"
[ "$(stat -c %a "$SCHEDTOOL_LOCAL_DIR/$id.json")" = 600 ] || fail "record mode"
pass "2-node run through agents on 127.0.3.1-2: done, both ranks in job.out"
[ "$("$tool" find "cadre-$(sed -n 's/^run_id=//p' "$rd/job.sh")")" = none ] ||
	fail "find names a job that has ended"
wait_for 10 test -z "$(procs_of "$rd")" || fail "processes left: $(procs_of "$rd")"

# A job outlives the tool that submitted it (cadred's restart).
rd2=$(newrun long) || fatal "mkdir"
echo sleep >"$rd2/fake-mode"
id2=$(submit "$rd2") || fatal "submit"
wait_for 30 grep -q 'rank 1 sleeping' "$rd2/job.out" ||
	fatal "ranks did not start: $(cat "$rd2/job.out")"
[ "$(state "$id2")" = running ] || fatal "fresh poll: $(state "$id2")"
name=cadre-$(sed -n 's/^run_id=//p' "$rd2/job.sh")
[ "$("$tool" find "$name")" = "$id2" ] || fail "find $name: $("$tool" find "$name")"
pass "the job outlives the submitting process; a fresh one polls (running) and finds it"

# cancel: cancelled, every process of the run gone.
"$tool" cancel "$id2" || fail "cancel"
line=$(wait_state 30 "$id2" cancelled) || fail "after cancel: $line"
wait_for 15 test -z "$(procs_of "$rd2")" || fail "processes left: $(ps -o pid,args -p "$(procs_of "$rd2" | tr '\n' ' ')")"
[ "$("$tool" find "$name")" = none ] || fail "find after cancel"
"$tool" cancel "$id2" || fail "cancel of an ended job"
pass "cancel: cancelled, no process of the run left, a second cancel is harmless"

# Ids and records that are not there.
line=$("$tool" poll local-1-1 garbage "local-dry-x")
[ "$(echo "$line" | cut -d' ' -f2 | tr '\n' ' ')" = "unknown unknown unknown " ] ||
	fail "unknown ids: $line"
pass "unknown ids are unknown"
exit $failed
