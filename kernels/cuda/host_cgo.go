//go:build cgo

package cuda

/*
#cgo CFLAGS: -O2 -fno-strict-aliasing
#include "mxint8_elem.h"

// gomase_mxint8_host runs the kernel's body for every thread of a grid of
// threads threads, one after the other.
static void gomase_mxint8_host(const signed char *m, const unsigned char *e, unsigned short *out,
                               long long n, int group_size, long long threads) {
	for (long long t = 0; t < threads; t++) {
		gomase_mxint8_dequantize_range(m, e, out, n, group_size, t, threads);
	}
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// HostBuild reports whether the kernels' C bodies are built for the host
// (this binary was built with cgo).
const HostBuild = true

// dequantizeOnHost runs the MXINT8 kernel's body on the host as a grid of
// threads threads would run it on the GPU, into bfloat16 bits. m and the
// result are 8-byte aligned (Go allocates slices of 8 bytes and more so).
func dequantizeOnHost(m []int8, e []uint8, groupSize, threads int) ([]uint16, error) {
	if len(m) == 0 || len(e) != (len(m)+groupSize-1)/groupSize || threads < 1 {
		return nil, fmt.Errorf("cuda: host dequantize: %d mantissas, %d exponents, group %d, %d threads", len(m), len(e), groupSize, threads)
	}
	// Copies with room to the next 8 bytes: the body reads m by 32-bit
	// words and writes out by 64-bit ones.
	mm := make([]uint64, (len(m)+7)/8)
	copy(unsafe.Slice((*int8)(unsafe.Pointer(&mm[0])), len(m)), m)
	out := make([]uint64, (len(m)+3)/4)
	C.gomase_mxint8_host((*C.schar)(unsafe.Pointer(&mm[0])), (*C.uchar)(unsafe.Pointer(&e[0])),
		(*C.ushort)(unsafe.Pointer(&out[0])), C.longlong(len(m)), C.int(groupSize), C.longlong(threads))
	return append([]uint16(nil), unsafe.Slice((*uint16)(unsafe.Pointer(&out[0])), len(m))...), nil
}
