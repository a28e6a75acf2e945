#!/bin/sh
# cadred on the private Slurm (tests/slurm/) with real containers: a
# 2-node run of the real trainer with container.runtime charliecloud, and
# one with oci, each to done inside the image of tests/container-image.sh
# (container.json says which program ran it). Then an image the nodes do
# not have (validate leaves that to the node on a cluster's backend): the
# run ends failed with wrap's message in cadre status's REASON.
# oci: the job script runs crun (runc where crun cannot run on this host)
# on every node itself. Slurm's own `srun --container` (oci.conf) is not
# configured in the private cluster: that would need oci.conf's run and
# query commands set up for the test's bundles, not tried here; cadre's
# job scripts do not use it.
. "$top_srcdir/tests/slurm/lib.sh"
. "$top_srcdir/tests/daemon/cadred-lib.sh"
use_real_programs
command -v ch-run >/dev/null || { echo "SKIP: no ch-run (charliecloud-runtime)"; exit 77; }
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
: "${USER:=$(id -un)}"
export ASAN_OPTIONS USER
extra_cleanup='cadred_stop KILL'
. "$top_srcdir/tests/container-image.sh"
binds="[$image_builddir]"
[ "$image_tmproot" = /tmp ] || binds="[$image_builddir, $image_tmproot]"

# crun refuses a host whose cgroups are half v1, half v2; runc runs there.
mkdir -m 0700 "$work/probe"
if [ -z "${CADRE_OCI_RUNTIME:-}" ] && ! "$top_builddir/cadre-agent" wrap \
    --container oci --image "$image" --run-dir "$work/probe" -- true 2>/dev/null; then
	echo "oci: crun cannot run here: runc"
	CADRE_OCI_RUNTIME=runc
	export CADRE_OCI_RUNTIME
fi

sh "$top_srcdir/tests/trainer/tinytext.sh" > "$work/text.txt"
"$top_builddir/cadre-train" vocab --quiet --size 120 -o "$work/vocab.txt" \
    "$work/text.txt" || { fail "vocab"; exit 1; }
"$top_builddir/cadre-train" prep --vocab "$work/vocab.txt" --format text \
    --task pretrain --seq-len 32 --out "$work/shards" "$work/text.txt" \
    >/dev/null 2>&1 || { fail "prep"; exit 1; }
cadred_start

spec() {	# spec RUNTIME [IMAGE]
	cat > "$work/$1.yaml" <<SPEC
version: 1
name: ct-$1
scheduler: { backend: slurm, time_limit: 10m, signal_grace: 60s }
resources: { nodes: 2, ranks_per_node: 1, cpus_per_rank: 1 }
agent: { startup_timeout: 60s }
container: { runtime: $1, image: ${2:-$image}, binds: $binds }
trainer:
  model: { layers: 2, hidden: 32, heads: 2, intermediate: 64, vocab_size: 128, max_position: 64 }
  data: $work/shards
  seq_len: 32
  batch_size: 4
  steps: 30
  log_every: 5
measure: { skip_steps: 2 }
SPEC
}

for rt in charliecloud oci; do
	spec $rt
	cadre submit "$work/$rt.yaml" >/dev/null 2>>"$work/d/cadred.log" ||
		{ fail "$rt: submit: $(tail -n 5 "$work/d/cadred.log")"; continue; }
	run=$(run_ids "$work/$rt.yaml")
	dir=$CADRE_STATE_DIR/runs/$run
	if wait_run 240 "$run" done; then
		pass "$rt: 2-node run $run done on Slurm"
	else
		fail "$rt: run $run $(run_field "$run" state): $(tail -n 20 "$dir/job.out" 2>/dev/null)"
		continue
	fi
	check "$rt: 2 ranks trained to the end" \
	    "$(grep -c '"event":"summary","step":30,"complete":true' "$dir/metrics.jsonl")" 1
	check "$rt: container.json's runtime" \
	    "$(sed -n 's/.*"runtime": "\([a-z]*\)".*/\1/p' "$dir/container.json")" "$rt"
	echo "$rt: $(cat "$dir/container.json" | tr -d '\n')"
done
# An image missing on the nodes: failed, the reason says why.
spec charliecloud "$work/nothere"
mv "$work/charliecloud.yaml" "$work/missing.yaml"
sed -i 's/^name: ct-charliecloud$/name: ct-missing/' "$work/missing.yaml"
cadre submit "$work/missing.yaml" >/dev/null 2>>"$work/d/cadred.log" ||
	fail "missing image: submit: $(tail -n 5 "$work/d/cadred.log")"
run=$(run_ids "$work/missing.yaml")
if wait_run 120 "$run" failed; then
	reason=$(cadre status "$run" --json 2>/dev/null | sed -n 's/^ *"reason": "\(.*\)",*$/\1/p' | head -n 1)
	case $reason in
	*"container.image $work/nothere: No such file"*) pass "missing image: failed; REASON: $reason" ;;
	*) fail "missing image: REASON: $reason" ;;
	esac
else
	fail "missing image: run $run $(run_field "$run" state)"
fi
left=$(pgrep -f "$CADRE_STATE_DIR/runs/$run" || true)
check "missing image: nothing left running" "$left" ""
exit $failed
