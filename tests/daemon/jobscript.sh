#!/bin/sh
# Job scripts rendered from etc/templates/ for a spec full of values a
# shell would misread (tests/daemon/specs/hostile.yaml) and a run dir with
# quotes, $ and backticks: bash -n accepts every script, and the values
# read back by bash are the ones given; the scripts for slurmrestd and
# PBS time SIGUSR1 themselves. A partition that an #SBATCH line
# cannot hold is refused with the key's name. Every script exports
# CADRE_DEADLINE, the end of the time limit; launch runs the trainer on
# train.json, or for a program spec (tests/daemon/specs/program.yaml)
# --program program.json, whose members are checked one by one; the
# local script keeps Gloo, NCCL and Open MPI on loopback.
set -u
: "${top_srcdir:?set top_srcdir}" "${top_builddir:?set top_builddir}"
tool=$top_builddir/tests/daemon/schedtool
specs=$top_srcdir/tests/daemon/specs
templates=$top_srcdir/etc/templates
. "$top_srcdir/tests/lib.sh"

command -v bash >/dev/null 2>&1 || skip "no bash"
rd="$work/run it's \$(touch $work/pwned) \`touch $work/pwned\` \"q\" \\"

# rendered WHAT KIND SPEC INDEX OUT: renders run INDEX of SPEC into OUT
# for $rd, and bash -n checks it; 1 when it could not be rendered.
rendered() {
	if ! "$tool" render "$2" "$templates" "$3" "$4" "$rd" "$5" \
	    2>"$work/err"; then
		fail "$1: render: $(cat "$work/err")"
		return 1
	fi
	if bash -n "$5" 2>"$work/err"; then
		pass "$1: bash -n"
	else
		fail "$1: bash -n: $(cat "$work/err")"
	fi
}

for kind in slurm slurm-rest pbs; do
	for i in 0 1; do
		out=$work/$kind-$i.sh
		rendered "$kind run $i" "$kind" "$specs/hostile.yaml" "$i" \
		    "$out" || continue
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

# The block of assignments and exports at the top, sourced by bash with
# the environment given: prints the variables named.
top_vars() {
	_script=$1
	shift
	sed -n '/^run_id=/,/^cd "\$run_dir"/p' "$_script" | sed '$d' \
	    >"$work/top"
	env "$@" bash -c '. "$1"; shift; for v; do eval "printf \"%s \" \"\${$v-}\""; done' \
	    sh "$work/top" CADRE_EXPERIMENT CADRE_CONFIG_ID \
	    CADRE_DEADLINE GLOO_SOCKET_IFNAME NCCL_SOCKET_IFNAME \
	    OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include
}

# launch's last words: the trainer on train.json, or the program.
trainer_words='@STAGE@ -- "$trainer" train --config "$run_dir/train.json" &'
program_words='--program "$run_dir/program.json" &'
for spec in hostile program; do
	for kind in slurm slurm-rest pbs local; do
		out=$work/$spec-$kind.sh
		rendered "$spec $kind" "$kind" "$specs/$spec.yaml" 0 "$out" ||
		    continue
		last=$(grep -A8 '"$agent" launch' "$out" | grep ' &$' |
		    sed 's/^ *//')
		if [ "$spec" = program ]; then
			check "$spec $kind: launch runs the program" "$last" \
			    "$program_words"
			if grep -q 'train --config' "$out"; then
				fail "$spec $kind: the trainer is still run"
			fi
		else
			check "$spec $kind: launch runs the trainer" \
			    "$last" "${trainer_words#@STAGE@ }"
		fi
		now=$(date +%s)
		set -- $(top_vars "$out")
		check "$spec $kind: CADRE_EXPERIMENT" "$1" \
		    "$(sed -n 's/^name: //p' "$specs/$spec.yaml")"
		case $2 in
		[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])
			pass "$spec $kind: CADRE_CONFIG_ID $2" ;;
		*)	fail "$spec $kind: CADRE_CONFIG_ID '$2'" ;;
		esac
		# both specs: a time limit of 10 minutes
		if [ "$3" -ge $((now + 600)) ] && [ "$3" -le $((now + 605)) ]
		then
			pass "$spec $kind: CADRE_DEADLINE is now + 10m"
		else
			fail "$spec $kind: CADRE_DEADLINE $3, now $now"
		fi
		if [ "$kind" = local ]; then
			check "$spec $kind: loopback for Gloo, NCCL, Open MPI" \
			    "$4 $5 $6 $7" "lo lo lo lo"
			set -- $(top_vars "$out" GLOO_SOCKET_IFNAME=eth9 \
			    NCCL_SOCKET_IFNAME=ib0)
			check "$spec $kind: Gloo's and NCCL's own kept" "$4 $5" \
			    "eth9 ib0"
		fi
	done
done
if grep -q "eval_data=''" "$work/program-slurm.sh"; then
	pass "program: no eval"
else
	fail "program: eval_data is set"
fi

# program.json: exactly its members, every value as the spec has it, ids
# as cadre plan gives them.
"$top_builddir/cadre" plan --json "$specs/program.yaml" >"$work/plan.json"
for i in 0 1; do
	if ! "$tool" program-json "$specs/program.yaml" "$i" \
	    "$work/program-$i.json" 2>"$work/err"; then
		fail "program.json $i: $(cat "$work/err")"
		continue
	fi
	if python3 - "$work/program-$i.json" "$work/plan.json" "$i" \
	    "$(cd "$specs" && pwd -P)/.." >"$work/err" 2>&1 <<'PY'
import json, os, stat, sys
path, plan, i, workdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
p = json.load(open(path))
run = json.load(open(plan))["runs"][i]
want = {
    "version": 1,
    "command": ["sh", "it's $(id) `id` \"q\"", "{batch}", "{{literal}}"],
    "launch": "per_node",
    "workdir": workdir,
    "env": {"N": "4", "WEIRD": "a'b $(id) `id`"},
    "vars": {"batch": ["16", "32"][i], "msg": 'x"y'},
    "signal": "SIGUSR2",
    "checkpoint_every": 300,
    "keep_checkpoints": 0,
    "setup": ["echo '{msg}' >/dev/null"],
    "experiment": "hostile-program",
    "run_id": run["id"],
    "config_id": run["config_id"],
}
assert p == want, "got %r" % p
assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
PY
	then
		pass "program.json $i: every member"
	else
		fail "program.json $i: $(cat "$work/err")"
	fi
done
# metrics_regex when the spec has one
"$tool" program-json "$top_srcdir/tests/data/specs/good/program.yaml" 0 \
    "$work/good.json"
got=$(python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); print(p["metrics_regex"], p["workdir"] == sys.argv[2], sorted(p))' \
    "$work/good.json" "$(cd "$top_srcdir/tests/data/specs/good" && pwd -P)")
check "program.json: metrics_regex, workdir ." "$got" \
    "step (?<step>\d+) loss (?<loss>[0-9.]+) (?P<samples_per_s>[0-9.]+)/s True ['checkpoint_every', 'command', 'config_id', 'env', 'experiment', 'keep_checkpoints', 'launch', 'metrics_regex', 'run_id', 'setup', 'signal', 'vars', 'version', 'workdir']"
if "$tool" program-json "$specs/hostile.yaml" 0 "$work/no.json" \
    2>"$work/err"; then
	fail "program.json of a trainer spec written"
elif grep -q "no program section" "$work/err"; then
	pass "program.json of a trainer spec refused"
else
	fail "program.json of a trainer spec: $(cat "$work/err")"
fi

# scheduler.constraint, reservation, exclusive and srun_extra; env and
# setup, with values a shell would misread
if rendered "sched options" slurm "$specs/sched-options.yaml" 0 "$work/opt.sh"; then
	for line in "#SBATCH --constraint=a100&(ib|eth)" \
	    "#SBATCH --reservation=training" "#SBATCH --exclusive"; do
		grep -qxF -- "$line" "$work/opt.sh" && pass "sched options: $line" ||
		    fail "sched options: no line '$line'"
	done
	got=$(bash -c "$(grep -E '^export (NCCL_DEBUG|ODD)=' "$work/opt.sh"); printf '%s|%s' \"\$NCCL_DEBUG\" \"\$ODD\"")
	check "env exported as written" "$got" "WARN|it's \$(id) \`id\` \"q\" \\ ;&|"
	# the srun of the agents, as the shell splits it: the extra words,
	# then the setup's sh -c, whose program runs the setup lines and
	# execs the agent
	python3 - "$work/opt.sh" "$work/prog" > "$work/words" <<'PY'
import shlex, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
start = text.index("\tsrun ")
w = shlex.split(text[start:text.index("node-serve", start) + len("node-serve")])
i = w.index("sh")
open(sys.argv[2], "w").write(w[i + 2])
print(" ".join(w[i - 2:i] + [w[i + 3]] + w[i + 4:i + 6]))
PY
	check "srun: srun_extra words, then the setup before the agent" \
	    "$(cat "$work/words")" "--cpu-bind=cores --comment=it's \$(id) ;&| cadre-setup \$agent node-serve"
	prog=$(cat "$work/prog")
	got=$(ODD=x sh -c "$prog" cadre-setup sh -c 'printf "%s" "$FROM_SETUP"')
	check "the setup program runs its lines, then execs the command" "$got" yes
	if ODD= sh -c "$prog" cadre-setup true 2>"$work/err"; then
		fail "a failing setup line went on"
	else
		grep -q "cadre: setup failed on .* (exit 1)" "$work/err" &&
		    pass "a failing setup line stops it, naming the node" ||
		    fail "failing setup: $(cat "$work/err")"
	fi
fi

if "$tool" render slurm "$templates" "$specs/bad-partition.yaml" 0 \
    "$work/r" "$work/bad.sh" 2>"$work/err"; then
	fail "bad partition rendered"
elif grep -q "bad-partition.yaml:4:41: error: scheduler.partition: 'gpu debug' cannot go into a job's scheduler lines" \
    "$work/err" && [ ! -e "$work/bad.sh" ]; then
	pass "bad partition refused where the spec has it (validate's check)"
else
	fail "bad partition: $(cat "$work/err")"
fi
exit $failed
