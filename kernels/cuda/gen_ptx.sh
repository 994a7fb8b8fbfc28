#!/bin/sh
# gen_ptx.sh: regenerate the PTX of the CUDA kernels from their sources (run by `make ptx`, or
# `go generate ./kernels/cuda`): mxint8.ptx from mxint8.cu and mxint8_elem.h, sdpa.ptx from
# sdpa.cu and sdpa_block.h. Needs clang-14 (Debian: apt-get install clang-14); no CUDA toolkit.
# The first line of each PTX records the sha256 of its own sources; a test compares it.
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang-14}
ARCH=${ARCH:-sm_80}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# ptx OUT.ptx MAIN.cu HEADER.h [extra clang flags]: compile MAIN.cu into OUT.ptx.
ptx() {
	out=$1 main=$2 header=$3
	shift 3
	hash=$(cat "$main" "$header" | sha256sum | cut -d' ' -f1)
	"$CLANG" -x cuda --cuda-device-only --cuda-gpu-arch="$ARCH" -nocudainc -nocudalib "$@" -O3 -S -o "$tmp" "$main"
	{
		echo "// source sha256: $hash ($main, $header; $("$CLANG" --version | head -n 1), --cuda-gpu-arch=$ARCH${*:+ $*} -O3)"
		cat "$tmp"
	} > "$out.new"
	mv "$out.new" "$out"
}

ptx mxint8.ptx mxint8.cu mxint8_elem.h
# The warp shuffles and __syncwarp need PTX 6.0 or later (clang does not assume it without the toolkit).
ptx sdpa.ptx sdpa.cu sdpa_block.h -Xclang -target-feature -Xclang +ptx70
