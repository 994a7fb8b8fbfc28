//go:build cgo

package cuda

/*
#cgo CFLAGS: -O2 -fno-strict-aliasing
#include <stdlib.h>
#include "mxint8_elem.h"
#include "sdpa_block.h"

// gomase_mxint8_host runs the kernel's body for every thread of a grid of
// threads threads, one after the other.
static void gomase_mxint8_host(const signed char *m, const unsigned char *e, unsigned short *out,
                               long long n, int group_size, long long threads) {
	for (long long t = 0; t < threads; t++) {
		gomase_mxint8_dequantize_range(m, e, out, n, group_size, t, threads);
	}
}

// gomase_sdpa_host runs every block of the SDPA kernel's grid, one after
// the other, each with its 256 threads phase by phase; it returns 0, or -1
// when out of memory.
static int gomase_sdpa_host(const gomase_sdpa_args *a, int half) {
	float *smem = malloc(sizeof(float) * gomase_sdpa_smem_floats(a->head_dim));
	gomase_sdpa_state *st = malloc(sizeof(gomase_sdpa_state) * GOMASE_SDPA_THREADS);
	if (!smem || !st) {
		free(smem);
		free(st);
		return -1;
	}
	int qblocks = (a->seq_q + GOMASE_SDPA_ROWS - 1) / GOMASE_SDPA_ROWS;
	for (long long bh = 0; bh < (long long)a->batch * a->heads; bh++)
		for (int qb = 0; qb < qblocks; qb++) gomase_sdpa_block(a, half, qb, bh, smem, st, 0);
	free(smem);
	free(st);
	return 0;
}

static unsigned short gomase_sdpa_host_half(float f) { return gomase_sdpa_float_half(f); }
static float gomase_sdpa_host_widen(unsigned short h) { return gomase_sdpa_half_float(h); }
static float gomase_sdpa_host_exp2(float x) { return gomase_sdpa_exp2(x); }
static long long gomase_sdpa_host_smem(int d) { return gomase_sdpa_smem_floats(d); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gomlx/compute/dtypes"
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

// sdpaOnHost runs the SDPA kernel's body on the host as its grid would run
// on the GPU. q, k, v and the result are float32 values, or float16 bits
// (uint16) for c.DType float16; mask is nil or holds the mask's elements.
func sdpaOnHost[T float32 | uint16](c SDPAConfig, q, k, v []T, mask []float32) ([]T, error) {
	call, err := SDPACall(c)
	if err != nil {
		return nil, err
	}
	c, _ = ParseSDPAConfig(call.Config)
	half := c.DType == dtypes.Float16
	if _, isHalf := any(q).([]uint16); isHalf != half {
		return nil, fmt.Errorf("cuda: host SDPA: %s tensors given as %T", c.DType, q)
	}
	want := []int{call.Operands[0].Size(), call.Operands[1].Size(), call.Operands[2].Size(), 0}
	if c.MaskDims != nil {
		want[3] = call.Operands[3].Size()
	}
	if len(q) != want[0] || len(k) != want[1] || len(v) != want[2] || len(mask) != want[3] {
		return nil, fmt.Errorf("cuda: host SDPA: %d, %d, %d, %d elements for q, k, v, mask (want %v)", len(q), len(k), len(v), len(mask), want)
	}
	// The arguments live in C memory: cgo lets no C struct hold Go pointers.
	total := 0
	for _, n := range want[:3] {
		total += n
	}
	size := int(unsafe.Sizeof(T(0)))
	buf := C.malloc(C.size_t(size*(total+want[0]) + 4*len(mask)))
	if buf == nil {
		return nil, fmt.Errorf("cuda: host SDPA: out of memory")
	}
	defer C.free(buf)
	elems := unsafe.Slice((*T)(buf), total+want[0])
	copy(elems, q)
	copy(elems[want[0]:], k)
	copy(elems[want[0]+want[1]:], v)
	a := (*C.gomase_sdpa_args)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gomase_sdpa_args{}))))
	defer C.free(unsafe.Pointer(a))
	a.q = unsafe.Pointer(&elems[0])
	a.k = unsafe.Pointer(&elems[want[0]])
	a.v = unsafe.Pointer(&elems[want[0]+want[1]])
	a.out = unsafe.Pointer(&elems[total])
	if mask != nil {
		m := unsafe.Slice((*float32)(unsafe.Add(buf, size*(total+want[0]))), len(mask))
		copy(m, mask)
		a.mask = (*C.float)(unsafe.Pointer(&m[0]))
	}
	for i, s := range c.MaskStrides() {
		a.mask_stride[i] = C.longlong(s)
	}
	a.batch, a.heads, a.seq_q, a.seq_k, a.head_dim = C.int(c.Batch), C.int(c.Heads), C.int(c.SeqQ), C.int(c.SeqK), C.int(c.HeadDim)
	a.scale = C.float(c.Scale)
	h := C.int(0)
	if half {
		h = 1
	}
	if C.gomase_sdpa_host(a, h) != 0 {
		return nil, fmt.Errorf("cuda: host SDPA: out of memory")
	}
	return append([]T(nil), elems[total:]...), nil
}

// The kernel's float16 conversions and exp2, for the tests.
func halfOnHost(f float32) uint16  { return uint16(C.gomase_sdpa_host_half(C.float(f))) }
func widenOnHost(h uint16) float32 { return float32(C.gomase_sdpa_host_widen(C.ushort(h))) }
func smemFloatsOnHost(d int) int   { return int(C.gomase_sdpa_host_smem(C.int(d))) }
func exp2OnHost(x float32) float32 { return float32(C.gomase_sdpa_host_exp2(C.float(x))) }
