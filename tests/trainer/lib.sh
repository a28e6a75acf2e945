# Sourced by the shell tests of cadre-train once top_srcdir and
# top_builddir are set: tests/lib.sh, and $tool, the cadre-train under test.
. "$top_srcdir/tests/lib.sh"
tool="$top_builddir/cadre-train"

# need_gpu: exits 77 without a GPU (nvidia-smi -L) or a build with CUDA
# (test_gpu is built only then), as every test of the CUDA path must; the
# sanitizers' shadow memory and the CUDA driver's mappings collide.
need_gpu() {
	if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
		skip "no GPU (nvidia-smi -L)"
	fi
	[ -x "$top_builddir/tests/trainer/test_gpu" ] ||
	    skip "built without CUDA (./configure --with-cuda)"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0:detect_leaks=0"
	export ASAN_OPTIONS
}

# need_prep: exits 77 where cadre-train has no prep (built without
# utf8proc), as every test of prep or of training on its shards must.
need_prep() {
	"$tool" prep --help > /dev/null 2>&1 ||
	    skip "cadre-train has no prep (built without utf8proc)"
}
