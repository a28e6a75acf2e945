#!/bin/sh
# The CUDA kernels' dropout masks (drop_factor, drop_factor4 of
# trainer/cuda/kernels.cuh, compiled for the host) against philox.c's
# dropout_apply, element for element: needs no GPU, only a build with
# CUDA (skipped, 77, without).
set -u
: "${top_builddir:=.}"
if [ ! -x "$top_builddir/tests/trainer/test_gpu" ]; then
	echo "SKIP: built without CUDA (./configure --with-cuda)"
	exit 77
fi
exec "$top_builddir/tests/trainer/test_gpu" --host
