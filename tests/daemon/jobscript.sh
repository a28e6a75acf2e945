#!/bin/sh
# Job scripts rendered from etc/templates/ for a spec full of values a
# shell would misread (tests/daemon/specs/hostile.yaml) and a run dir with
# quotes, $ and backticks: bash -n accepts every script, and the values
# read back by bash are the ones given; the scripts for slurmrestd and
# PBS time SIGUSR1 themselves. A partition that an #SBATCH line
# cannot hold is refused with the key's name.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
tool=$top_builddir/tests/daemon/schedtool
specs=$top_srcdir/tests/daemon/specs
templates=$top_srcdir/etc/templates
. "$top_srcdir/tests/lib.sh"

command -v bash >/dev/null 2>&1 || skip "no bash"
rd="$work/run it's \$(touch $work/pwned) \`touch $work/pwned\` \"q\" \\"
for kind in slurm slurm-rest pbs; do
	for i in 0 1; do
		out=$work/$kind-$i.sh
		if ! "$tool" render "$kind" "$templates" "$specs/hostile.yaml" \
		    "$i" "$rd" "$out" 2>"$work/err"; then
			fail "$kind run $i: render: $(cat "$work/err")"
			continue
		fi
		if bash -n "$out" 2>"$work/err"; then
			pass "$kind run $i: bash -n"
		else
			fail "$kind run $i: bash -n: $(cat "$work/err")"
		fi
		# The assignments at the top, run by bash, give back the values.
		sed -n '/^run_id=/,/^startup_timeout=/p' "$out" > "$work/vars"
		got=$(bash -c '. "$1"; printf "%s" "$run_dir"' sh "$work/vars")
		if [ "$got" = "$rd" ]; then
			pass "$kind run $i: run dir read back"
		else
			fail "$kind run $i: run dir read back as '$got'"
		fi
		# Container words: the image path comes back whole.
		img=$(sed -n "s/^.*'--image' \('[^-]*\) '--bind'.*$/\1/p" "$out" |
		    head -n 1)
		got=$(bash -c "printf '%s' $img")
		exp="/images/it's a \$(id) \`id\` \"test\".sif"
		if [ "$got" = "$exp" ]; then
			pass "$kind run $i: image read back"
		else
			fail "$kind run $i: image read back as '$got'"
		fi
		nodes=$((i + 1))
		case $kind in
		slurm|slurm-rest) line="#SBATCH --nodes=$nodes" ;;
		pbs) line="#PBS -l select=$nodes:ncpus=2:mpiprocs=2:mem=100mb" ;;
		esac
		case $kind in
		slurm) self=no ;;
		*) self=yes ;;
		esac
		if grep -qx "self_signal=$self" "$out"; then
			pass "$kind run $i: self_signal=$self"
		else
			fail "$kind run $i: no self_signal=$self"
		fi
		if grep -qx -- "$line" "$out"; then
			pass "$kind run $i: $line"
		else
			fail "$kind run $i: no line '$line'"
		fi
	done
done
if [ -e "$work/pwned" ]; then
	fail "a value was run as a command"
else
	pass "no value was run as a command"
fi

if "$tool" render slurm "$templates" "$specs/bad-partition.yaml" 0 \
    "$work/r" "$work/bad.sh" 2>"$work/err"; then
	fail "bad partition rendered"
elif grep -q "scheduler.partition: 'gpu debug' cannot be written" \
    "$work/err" && [ ! -e "$work/bad.sh" ]; then
	pass "bad partition refused"
else
	fail "bad partition: $(cat "$work/err")"
fi
exit $failed
