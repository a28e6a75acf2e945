#!/bin/sh
# `launch --launcher srun` and container wrapping, with fakes for srun
# and apptainer that record their arguments and run the tasks locally
# (SLURM_PROCID, SLURMD_NODENAME set as Slurm would); `wrap`.
. "$top_srcdir/tests/agent/lib.sh"

"$agent" keygen --run-dir "$rd" || fail "keygen"
bin=$work/bin
mkdir "$bin"
cat > "$bin/srun" <<'EOF'
#!/bin/sh
# fake srun (no real one in this test yet): --nodes x --ntasks-per-node local tasks, node names from
# $FAKE_NODES; exits with the highest task status.
echo "$*" > "$FAKE_LOG/srun.args"
nodes=1 per=1
while [ $# -gt 0 ]; do
	case $1 in
	--nodes=*) nodes=${1#--nodes=} ;;
	--ntasks-per-node=*) per=${1#--ntasks-per-node=} ;;
	--*) ;;
	*) break ;;
	esac
	shift
done
kids= r=0 j=0
while [ $j -lt "$nodes" ]; do
	t=0
	node=$(echo $FAKE_NODES | cut -d' ' -f$((j + 1)))
	while [ $t -lt "$per" ]; do
		SLURM_PROCID=$r SLURMD_NODENAME=$node "$@" &
		kids="$kids $!"
		r=$((r + 1)); t=$((t + 1))
	done
	j=$((j + 1))
done
rc=0
for k in $kids; do wait "$k"; s=$?; [ $s -gt $rc ] && rc=$s; done
exit $rc
EOF
cat > "$bin/apptainer" <<'EOF'
#!/bin/sh
# fake apptainer: records "exec [--nv] --bind D ... IMAGE", runs the rest.
echo "$*" >> "$FAKE_LOG/apptainer.args"
[ "$1" = exec ] || exit 90
shift
while :; do
	case $1 in
	--nv) shift ;;
	--bind) shift 2 ;;
	*) break ;;
	esac
done
shift	# the image
exec "$@"
EOF
chmod 0755 "$bin/srun" "$bin/apptainer"
FAKE_LOG=$work FAKE_NODES="n1 n2"
PATH=$bin:$PATH
export FAKE_LOG FAKE_NODES PATH

task='echo "task $SLURM_PROCID on $SLURMD_NODENAME"'
timeout 60 "$agent" launch --run-dir "$rd" --launcher srun --srun "$bin/srun" \
	--nodes 'n[1-2]' --slots 2 --container apptainer --image /img/cadre.sif \
	--bind /scratch --nv -- sh -c "$task" >"$work/out" 2>"$work/err"; rc=$?
[ "$rc" = 0 ] || fail "srun launch: status $rc: $(cat "$work/err")"
for r in 0 1 2 3; do
	n=n$((r / 2 + 1))
	grep -qx "\[rank $r $n\] task $r on $n" "$rd/log/rank-$r.log" ||
		fail "rank $r log: $(cat "$rd/log/rank-$r.log" 2>&1)"
done
grep -q -- "--nodes=2 --ntasks-per-node=2 --nodelist=n\[1-2\] --distribution=block --mpi=pmix" "$work/srun.args" ||
	fail "srun words: $(cat "$work/srun.args")"
grep -q "^exec --nv --bind $rd --bind /scratch /img/cadre.sif .*/cadre-agent rank --run-dir" "$work/apptainer.args" ||
	[ "$(grep -c "^exec --nv --bind $rd --bind /scratch /img/cadre.sif " "$work/apptainer.args")" = 4 ] ||
	fail "apptainer words: $(cat "$work/apptainer.args")"
grep -q '"reason": "done"' "$rd/status.json" || fail "status.json"
ok "srun launcher: 4 tasks on n1,n2 inside 'apptainer exec --nv --bind RUN --bind /scratch IMAGE', tagged logs, done"

rm -f "$work/apptainer.args"
timeout 60 "$agent" launch --run-dir "$rd" --launcher srun --srun "$bin/srun" \
	--nodes 'n[1-2]' --container enroot --image 'nvcr.io#nvidia/pytorch:24.01' \
	--bind /data -- sh -c 'exit $((SLURM_PROCID == 1 ? 4 : 0))' >"$work/out" 2>"$work/err"; rc=$?
[ "$rc" = 1 ] || fail "failing task: status $rc: $(cat "$work/err")"
grep -q "rank 1 on n2 exited with status 4" "$work/err" || fail "failing task message: $(cat "$work/err")"
grep -q -- "--container-image=nvcr.io#nvidia/pytorch:24.01 --container-mounts=$rd:$rd,/data:/data" "$work/srun.args" ||
	fail "pyxis options: $(cat "$work/srun.args")"
[ -f "$work/apptainer.args" ] && fail "enroot went through apptainer"
ok "enroot through pyxis: --container-image/--container-mounts on srun; a failing task names rank 1 on n2"

printf 'n1\nn1\nn2\n' > "$work/nodefile"
timeout 60 "$agent" launch --run-dir "$rd" --launcher srun --srun "$bin/srun" \
	--nodefile "$work/nodefile" -- true 2>"$work/err" && fail "uneven slots accepted for srun"
grep -q "same number of slots" "$work/err" || fail "uneven slots message: $(cat "$work/err")"
timeout 60 "$agent" launch --run-dir "$rd" --launcher srun --srun "$bin/srun" \
	--nodes n1 --container apptainer -- true 2>"$work/err"; rc=$?
[ "$rc" = 2 ] || fail "apptainer without an image: status $rc"
ok "srun: uneven slots and a container without an image refused"

out=$("$agent" wrap --run-dir "$rd" --container singularity --image /i.sif --bind /a --print -- echo 'x y')
[ "$out" = "singularity exec --bind $rd --bind /a /i.sif echo 'x y'" ] || fail "wrap --print: $out"
# wrap checks the image before starting the (fake) runtime: a real file
: > "$work/i.sif"
out=$("$agent" wrap --run-dir "$rd" --container apptainer --image "$work/i.sif" -- echo inside)
[ "$out" = inside ] || fail "wrap exec: $out"
grep -q "^exec --bind $rd $work/i.sif echo inside" "$work/apptainer.args" || fail "wrap words: $(cat "$work/apptainer.args")"
"$agent" wrap --run-dir "$rd" --container apptainer --image "$work/none.sif" -- echo inside 2>"$work/err" &&
	fail "wrap started apptainer on a missing image"
grep -q "container.image $work/none.sif: No such file" "$work/err" || fail "missing image: $(cat "$work/err")"
grep -q "No such file" "$rd/status.json" || fail "missing image: status.json: $(cat "$rd/status.json" 2>&1)"
rm -f "$rd/status.json"
"$agent" wrap --run-dir "$rd" --container apptainer --image /i.sif --bind /a,b -- true 2>/dev/null && fail "bind with a comma accepted"
"$agent" wrap --run-dir "$rd" --container enroot --image x -- true 2>/dev/null && fail "enroot wrap without srun accepted"
"$agent" wrap --run-dir "$rd" --container docker -- true 2>/dev/null && fail "unknown runtime accepted"
ok "wrap: --print quoting, exec inside (fake) apptainer, a missing image, bad bind/runtime refused"
exit 0
