#!/bin/sh
# The pbs backend (sched/sched_pbs.c) against FAKE qsub, qstat and qdel
# (no live PBS server can run here): qsub gets every value as its own argv
# word and the rendered etc/templates/pbs.sh.in; qstat serves the
# hand-written `qstat -x -f -F json` reply in tests/daemon/pbs/ and says
# "Unknown Job Id" for the rest, as PBS does; each job's state comes out
# right, unknown ids are "unknown", a failing qstat fails the poll.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
tool=$top_builddir/tests/daemon/schedtool
. "$top_srcdir/tests/lib.sh"

# ---------------------------------------------------------------- fakes
bin=$work/fake-bin
mkdir "$bin"
FAKE_PBS=$work/fake
mkdir "$FAKE_PBS"
cp "$top_srcdir/tests/daemon/pbs/qstat.json" "$FAKE_PBS/qstat.json"
export FAKE_PBS
cat > "$bin/qsub" <<'FAKE'
#!/bin/sh
# FAKE qsub: records its arguments, one per line, and the script.
printf '%s\n' "$@" > "$FAKE_PBS/qsub.args"
for last; do :; done
cp "$last" "$FAKE_PBS/submitted.sh"
echo 101.pbs01
FAKE
cat > "$bin/qstat" <<'FAKE'
#!/bin/sh
# FAKE qstat -x -f -F json ID...: the recorded reply, "Unknown Job Id" for
# ids not in it; $FAKE_PBS/down: the server cannot be reached. Only the
# JSON form is faked: asked for another, it fails.
if [ -e "$FAKE_PBS/down" ]; then
	echo "Connection refused" >&2
	echo "qstat: cannot connect to server pbs01 (errno=111)" >&2
	exit 2
fi
json=0 rc=0 any=0
for a; do
	case $a in
	-x|-f|-F) ;;
	json) json=1 ;;
	*)
		if grep -q "\"$a\":{" "$FAKE_PBS/qstat.json"; then
			any=1
		else
			echo "qstat: Unknown Job Id $a" >&2
			rc=153
		fi
		;;
	esac
done
if [ $json -eq 0 ]; then
	echo "qstat: the fake answers -F json only" >&2
	exit 2
fi
[ $any -eq 1 ] && cat "$FAKE_PBS/qstat.json"
exit $rc
FAKE
cat > "$bin/qdel" <<'FAKE'
#!/bin/sh
# FAKE qdel ID: known ids are those of the recorded reply.
if grep -q "\"$1\":{" "$FAKE_PBS/qstat.json"; then
	echo "$1" >> "$FAKE_PBS/qdel.log"
	exit 0
fi
echo "qdel: Unknown Job Id $1" >&2
exit 153
FAKE
chmod 0755 "$bin"/*
SCHEDTOOL_BACKEND=pbs
SCHEDTOOL_BINDIR=$bin
export SCHEDTOOL_BACKEND SCHEDTOOL_BINDIR

# ---------------------------------------------------------------- submit
cat > "$work/spec.yaml" <<'SPEC'
version: 1
name: pbstest
scheduler:
  backend: pbs
  partition: workq
  time_limit: 10m
  signal_grace: 60s
  extra: ["-l", "place=scatter:excl", "-W", "group_list=it's $(id)"]
resources: { nodes: 2, ranks_per_node: 2 }
trainer: { model: bert-tiny, data: /nonexistent, steps: 10 }
measure: { skip_steps: 0 }
SPEC
rd="$work/run it's \$x"
mkdir "$rd"
id=$("$tool" submit "$top_srcdir/etc/templates" "$work/spec.yaml" 0 "$rd")
check "qsub: job id" "$id" 101.pbs01
name=$(sed -n 's/^#PBS -N //p' "$rd/job.sh")
printf '%s\n' -N "$name" -o "$rd/job.out" -j oe -l place=scatter:excl -W \
    "group_list=it's \$(id)" "$rd/job.sh" > "$work/expected.args"
if cmp -s "$work/expected.args" "$FAKE_PBS/qsub.args"; then
	pass "qsub: each value one argv word"
else
	fail "qsub arguments:"
	diff "$work/expected.args" "$FAKE_PBS/qsub.args" | sed 's/^/  /'
fi
check "qsub: the rendered script" "$(cmp -s "$rd/job.sh" "$FAKE_PBS/submitted.sh" && echo same)" same
check "job.sh: #PBS select" "$(grep -c '^#PBS -l select=2:ncpus=2:mpiprocs=2$' "$rd/job.sh")" 1
check "job.sh: #PBS walltime" "$(grep -c '^#PBS -l walltime=0:10:00$' "$rd/job.sh")" 1
check "job.sh: queue" "$(grep -c '^#PBS -q workq$' "$rd/job.sh")" 1
if bash -n "$rd/job.sh"; then pass "job.sh: bash -n"; else fail "job.sh: bash -n"; fi

# ---------------------------------------------------------------- poll
"$tool" poll 101.pbs01 102.pbs01 103.pbs01 104.pbs01 105.pbs01 106.pbs01 \
    107.pbs01 108.pbs01 109.pbs01 999.pbs01 > "$work/poll" 2>"$work/err" ||
    fail "poll: $(cat "$work/err")"
cut -d' ' -f1-4 "$work/poll" > "$work/got"
cat > "$work/expected" <<'EXPECTED'
101.pbs01 running -1 0
102.pbs01 queued -1 0
103.pbs01 done 0 0
104.pbs01 failed 3 0
105.pbs01 timeout -1 15
106.pbs01 cancelled -1 0
107.pbs01 failed -1 0
108.pbs01 failed -1 9
109.pbs01 queued -1 0
999.pbs01 unknown -1 0
EXPECTED
if cmp -s "$work/expected" "$work/got"; then
	pass "poll: states from the hand-written reply"
else
	fail "poll:"
	diff "$work/expected" "$work/got" | sed 's/^/  /'
fi
check "poll: reason" "$(grep '^102' "$work/poll" | cut -d' ' -f5-)" \
    "Not Running: Insufficient amount of resource: ncpus (R: 4 A: 0 T: 4)"
check "poll: only unknown ids" "$("$tool" poll 998.pbs01 999.pbs01 | cut -d' ' -f2 | tr '\n' ' ')" \
    "unknown unknown "

# ---------------------------------------------------------------- cancel
"$tool" cancel 101.pbs01 || fail "qdel"
check "qdel got the id" "$(cat "$FAKE_PBS/qdel.log")" 101.pbs01
if "$tool" cancel 999.pbs01 2>/dev/null; then
	fail "cancel of an unknown job succeeded"
else
	pass "cancel of an unknown job fails"
fi

# ---------------------------------------------------------------- server down
touch "$FAKE_PBS/down"
if "$tool" poll 101.pbs01 >/dev/null 2>&1; then
	fail "poll with the server down succeeded"
else
	pass "poll with the server down fails (no job reported unknown)"
fi
exit $failed
