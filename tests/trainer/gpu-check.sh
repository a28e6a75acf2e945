#!/bin/sh
# The fp32 CUDA path against the CPU reference (tests/trainer/test_gpu.c:
# gradients of bert-tiny and bert-mini within 1e-4, losses, AdamW and LAMB
# steps). Skipped (77) without CUDA in the build or a device.
set -u
: "${top_builddir:=.}"
if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
	echo "SKIP: no GPU (nvidia-smi -L)"
	exit 77
fi
if [ ! -x "$top_builddir/tests/trainer/test_gpu" ]; then
	echo "SKIP: built without CUDA (./configure --with-cuda)"
	exit 77
fi
# The sanitizers' shadow memory and the CUDA driver's mappings collide.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}protect_shadow_gap=0:detect_leaks=0"
export ASAN_OPTIONS
exec "$top_builddir/tests/trainer/test_gpu"
