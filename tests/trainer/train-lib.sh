# Sourced by tests/trainer/train-*.sh: tests/trainer/lib.sh, a small shard
# set made with `cadre-train vocab` and `prep`, a small model's train.json,
# and comparisons of losses (metrics.jsonl) and weights (safetensors).
: "${top_srcdir:=.}" "${top_builddir:=.}"
. "$top_srcdir/tests/trainer/lib.sh"
# Open MPI's own allocations are not ours to report.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS
export OMP_NUM_THREADS=1

# make_shards DIR: 64 paragraphs of pseudo-random sentences (a fixed LCG),
# a vocab of them, and pretraining shards of 32 tokens. Exits 77 when
# cadre-train has no prep (built without utf8proc).
make_shards() {
	need_prep
	sh "$top_srcdir/tests/trainer/tinytext.sh" > "$work/text.txt"
	"$tool" vocab --quiet --size 120 -o "$work/vocab.txt" "$work/text.txt" ||
	    { echo "FAIL: vocab"; exit 1; }
	"$tool" prep --vocab "$work/vocab.txt" --format text --task pretrain \
	    --seq-len 32 --out "$1" "$work/text.txt" > "$work/prep.log" 2>&1 ||
	    { cat "$work/prep.log"; echo "FAIL: prep"; exit 1; }
}

# write_cfg FILE DATA OUT [KEY VALUE]...: a small model's train.json with
# the given keys replaced (values are JSON). Device cpu unless replaced:
# these tests check the CPU path even where a GPU is visible.
write_cfg() {
	f=$1 data=$2 out=$3
	shift 3
	set -- "model" '{"layers": 2, "hidden": 32, "heads": 2, "intermediate": 64, "vocab_size": 128, "max_position": 64}' \
	    "data" "\"$data\"" "out" "\"$out\"" "seq_len" 32 "batch_size" 4 \
	    "grad_accum" 1 "steps" 20 "dropout" 0.1 "log_every" 1 "seed" 7 \
	    "checkpoint_every" 0 "skip_steps" 2 "device" '"cpu"' "$@"
	awk 'BEGIN {
		n = ARGC - 1;
		for (i = 1; i < n; i += 2) { v[ARGV[i]] = ARGV[i + 1]; if (!(ARGV[i] in seen)) { seen[ARGV[i]] = 1; k[++nk] = ARGV[i] } }
		printf "{\"version\": 1";
		for (i = 1; i <= nk; i++) printf ",\n \"%s\": %s", k[i], v[k[i]];
		printf ",\n \"optimizer\": {\"name\": \"adamw\", \"lr\": 0.002, \"weight_decay\": 0.01, \"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-6, \"warmup\": 0.1, \"schedule\": \"linear\", \"power\": 1}}\n";
		exit
	}' "$@" > "$f"
}

# losses RUN_DIR: "step loss" of every step line.
losses() {
	sed -n 's/.*"event":"step","step":\([0-9]*\),.*"loss":\([^,]*\),.*/\1 \2/p' \
	    "$1/metrics.jsonl"
}

# close_losses A B TOL: the same steps, losses within TOL relative.
close_losses() {
	losses "$1" > "$work/l1"
	losses "$2" > "$work/l2"
	[ -s "$work/l1" ] || return 1
	paste -d ' ' "$work/l1" "$work/l2" | awk -v tol="$3" '
	    { if ($1 != $3) bad = 1; d = $2 - $4; if (d < 0) d = -d;
	      m = $4 < 0 ? -$4 : $4; if (d > tol * m) bad = 1 }
	    END { exit bad }'
}

# close_weights A.safetensors B.safetensors TOL [PREFIX]: every F32 tensor's
# (whose name starts with PREFIX) max|a-b| / max|b| within TOL (Python's
# array module; skipped, with success, without python3). The attention key
# biases are left out: their gradient is zero in exact arithmetic (a
# softmax ignores a constant added to a row), so they hold rounding noise
# that Adam scales up to steps of lr, different for any change of the
# summation order (docs/trainer.md "Data parallelism").
close_weights() {
	command -v python3 > /dev/null 2>&1 || return 0
	python3 - "$1" "$2" "$3" "${4:-}" <<'PY'
import array, json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__" or v["dtype"] != "F32" or not k.startswith(sys.argv[4]) \
                or k.endswith("attention.self.key.bias"):
            continue
        s, e = v["data_offsets"]
        a = array.array("f")
        a.frombytes(b[8 + n + s:8 + n + e])
        out[k] = a
    return out
a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
assert a.keys() == b.keys()
worst = 0.0
wk = ""
for k in a:
    m = max(max(abs(x) for x in b[k]), 1e-12)
    d = max(abs(x - y) for x, y in zip(a[k], b[k]))
    if d / m > worst:
        worst, wk = d / m, k
print("worst relative weight difference %.3g%s" % (worst, " (" + wk + ")" if worst > 0 else ""))
sys.exit(0 if worst <= tol else 1)
PY
}
