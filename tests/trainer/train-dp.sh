#!/bin/sh
# Data parallelism: the loss is a mean over the global batch, so 1 rank
# with batch 8, 1 rank with batch 4 and 2 micro-batches, and 2 ranks
# (mpirun) with batch 4 take the same 10 steps (dropout 0): losses within
# 1e-6 relative, and every tensor of the final weights within 1e-6
# relative in the L2 norm, ||a - b|| / ||b|| over the tensor (measured:
# losses 1.6e-9, weights 3.9e-7 at worst, an intermediate bias). The
# attention key biases are left out: their gradient is zero in exact
# arithmetic (a softmax ignores a constant added to a row), so they hold
# only rounding noise, which AdamW scales up to steps of lr whatever the
# summation order: ||a - b|| / ||b|| is about 1 for them in any two runs
# that sum in another order. With dropout the 2-rank run and the
# accumulating run draw the same masks (the dropout stream is numbered by
# global micro-batch), and a 2-rank run stops and resumes exactly.
# Skipped (77) without mpirun or without MPI in cadre-train.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/trainer/train-lib.sh"
command -v mpirun > /dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 77; }
"$tool" --version > /dev/null 2>&1
make_shards "$work/shards"
mpi="mpirun --oversubscribe -np 2 -x ASAN_OPTIONS -x OMP_NUM_THREADS"
[ "$(id -u)" -eq 0 ] && mpi="$mpi --allow-run-as-root"

write_cfg "$work/c1.json" "$work/shards" "$work/r1" batch_size 8 steps 10 dropout 0
write_cfg "$work/c2.json" "$work/shards" "$work/r2" batch_size 4 grad_accum 2 steps 10 dropout 0
write_cfg "$work/c3.json" "$work/shards" "$work/r3" batch_size 4 steps 10 dropout 0
"$tool" train --config "$work/c1.json" --quiet || fail "1 rank batch 8"
"$tool" train --config "$work/c2.json" --quiet || fail "1 rank batch 4 accum 2"
$mpi "$tool" train --config "$work/c3.json" --quiet > "$work/mpi.log" 2>&1; st=$?
if [ $st -ne 0 ]; then
	cat "$work/mpi.log"
	fail "mpirun -np 2: exit $st"
	exit 1
fi
grep -q '"event":"start",.*"ranks":2,.*"global_batch":8' "$work/r3/metrics.jsonl" &&
    pass "2 ranks: start says ranks 2, global batch 8" || fail "2 ranks: start line"
grep -q '"mpi":"Open MPI' "$work/r3/metrics.jsonl" && pass "summary names Open MPI" ||
    fail "summary env.mpi"
close_losses "$work/r1" "$work/r2" 1e-6 && pass "losses: batch 8 = batch 4 accum 2 (1e-6)" ||
    fail "losses: batch 8 vs batch 4 accum 2"
close_losses "$work/r1" "$work/r3" 1e-6 && pass "losses: batch 8 = 2 ranks batch 4 (1e-6)" ||
    fail "losses: batch 8 vs 2 ranks"
# weights_l2 A B TOL: every F32 tensor but the key biases of B within TOL
# of A's in ||b - a|| / ||a|| (Python's array module; skipped, with a pass
# that says so, without python3).
weights_l2() {
	command -v python3 > /dev/null 2>&1 || { echo "not compared (no python3)"; return 0; }
	python3 - "$1" "$2" "$3" <<'PY'
import array, json, math, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    out = {}
    for k, v in json.loads(b[8:8 + n]).items():
        if k == "__metadata__" or v["dtype"] != "F32" or k.endswith("attention.self.key.bias"):
            continue
        s, e = v["data_offsets"]
        out[k] = array.array("f", b[8 + n + s:8 + n + e])
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if not a or a.keys() != b.keys():
    print("the files hold other tensors")
    sys.exit(1)
worst, wk = 0.0, ""
for k in a:
    d = math.sqrt(sum((float(x) - y) ** 2 for x, y in zip(a[k], b[k])))
    na = math.sqrt(sum(float(x) * x for x in a[k]))
    r = d / na if na > 0 else (0.0 if d == 0 else math.inf)
    if r >= worst:
        worst, wk = r, k
print("worst per-tensor L2 relative difference %.3g (%s)" % (worst, wk))
sys.exit(0 if worst <= tol else 1)
PY
}
for r in r2 r3; do
	w=$(weights_l2 "$work/r1/checkpoints/step-10/model.safetensors" \
	    "$work/$r/checkpoints/step-10/model.safetensors" 1e-6) &&
	    pass "weights after 10 steps, r1 vs $r (1e-6): $w" || fail "weights r1 vs $r: $w"
done

# dropout on: 2 ranks = 1 rank accum 2 (same masks), and a stop/resume
write_cfg "$work/d2.json" "$work/shards" "$work/s2" batch_size 4 grad_accum 2 steps 8
write_cfg "$work/d3.json" "$work/shards" "$work/s3" batch_size 4 steps 8
"$tool" train --config "$work/d2.json" --quiet || fail "dropout: 1 rank accum 2"
$mpi "$tool" train --config "$work/d3.json" --quiet --stop-after 4 > "$work/mpi.log" 2>&1; st=$?
[ $st -ne 0 ] && grep -q '"event":"checkpoint","step":4,.*"reason":"signal"' "$work/s3/metrics.jsonl" &&
    pass "2 ranks stop at step 4 with a checkpoint (mpirun exit $st)" ||
    fail "2 ranks stop: exit $st"
$mpi "$tool" train --config "$work/d3.json" --quiet > "$work/mpi.log" 2>&1 ||
    { cat "$work/mpi.log"; fail "2 ranks resume"; }
close_losses "$work/s2" "$work/s3" 1e-6 &&
    pass "dropout 0.1: 2 ranks (stopped and resumed) = 1 rank accum 2 (1e-6)" ||
    fail "dropout: 2 ranks vs accum 2"
# eval split over 2 ranks = eval on one
"$tool" eval --init "$work/r1/checkpoints/step-10" --data "$work/shards" --batch 4 > "$work/e1"
$mpi "$tool" eval --init "$work/r1/checkpoints/step-10" --data "$work/shards" --batch 2 \
    > "$work/e2" 2> "$work/mpi.log"
m1=$(sed -n 's/.*"masked":\([0-9]*\).*/\1/p' "$work/e1")
m2=$(sed -n 's/.*"masked":\([0-9]*\).*/\1/p' "$work/e2")
l1=$(sed -n 's/.*"mlm_loss":\([^,]*\).*/\1/p' "$work/e1")
l2=$(sed -n 's/.*"mlm_loss":\([^,]*\).*/\1/p' "$work/e2")
[ -n "$m1" ] && [ "$m1" = "$m2" ] && echo "$l1 $l2" | awk '{ d = $1 - $2; exit !(d * d <= 1e-12 * $1 * $1) }' &&
    pass "eval on 2 ranks = on 1 (masked $m1, loss $l1 / $l2)" ||
    fail "eval: $(cat "$work/e1" "$work/e2")"
exit $failed
