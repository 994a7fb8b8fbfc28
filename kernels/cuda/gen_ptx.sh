#!/bin/sh
# gen_ptx.sh: regenerate mxint8.ptx from mxint8.cu and mxint8_elem.h (run by `make ptx`, or
# `go generate ./kernels/cuda`). Needs clang-14 (Debian: apt-get install clang-14); no CUDA toolkit.
# The first line of the PTX records the sha256 of the sources it came from; a test compares it.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang-14}
ARCH=${ARCH:-sm_80}
hash=$(cat mxint8.cu mxint8_elem.h | sha256sum | cut -d' ' -f1)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$CLANG" -x cuda --cuda-device-only --cuda-gpu-arch="$ARCH" -nocudainc -nocudalib -O3 -S -o "$tmp" mxint8.cu
{
	echo "// source sha256: $hash (mxint8.cu, mxint8_elem.h; $("$CLANG" --version | head -n 1), --cuda-gpu-arch=$ARCH -O3)"
	cat "$tmp"
} > mxint8.ptx.new
mv mxint8.ptx.new mxint8.ptx
