//go:build amd64 && goexperiment.simd

package mxint8

import (
	"simd/archsimd"
	"unsafe"

	"github.com/gomlx/compute/dtypes/bfloat16"
)

// hasAVX2 and hasAVX512 select the loops of dequantizeVec (AVX-512
// first).
var (
	hasAVX2   = archsimd.X86.AVX2()
	hasAVX512 = archsimd.X86.AVX512()
)

// Constant vectors of the AVX2 loop.
var (
	// hiBytes moves bytes 8..15 of an Int8x16 to 0..7 (VPSHUFB).
	hiBytes = [16]int8{8, 9, 10, 11, 12, 13, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1}
	// unlane undoes VPACKUSDW's per-128-bit-lane interleaving (VPERMD):
	// the packed dwords hold (lo0,lo1) (lo2,lo3) (hi0,hi1) (hi2,hi3)
	// (lo4,lo5) (lo6,lo7) (hi4,hi5) (hi6,hi7).
	unlane = [8]uint32{0, 1, 4, 5, 2, 3, 6, 7}
	// highHalves picks the upper uint16 of each float32 of two
	// Float32x16 (VPERMI2W): 1, 3, ..., 63.
	highHalves = func() (h [32]uint16) {
		for i := range h {
			h[i] = uint16(2*i + 1)
		}
		return h
	}()
)

// dequantizeVec decodes the longest prefix of whole groups it can with
// AVX-512 (dequantize512) or AVX2, and returns its length (0 without
// AVX2). The AVX2 loop takes 16 values at a time (for group size 8, whole
// pairs of groups): sign-extend to two Int32x8, convert to float32,
// multiply by the group's 2^(E−133), shift the bit patterns right by 16
// and pack to uint16.
func dequantizeVec(dst []bfloat16.BFloat16, m []int8, e []uint8, gs int) int {
	if !hasAVX2 || len(m) < 16 {
		return 0
	}
	d := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst))
	if hasAVX512 {
		return dequantize512(d, m, e, gs)
	}
	hi := archsimd.LoadInt8x16(&hiBytes)
	perm := archsimd.LoadUint32x8(&unlane)
	full := len(m) / gs
	if gs == 8 {
		pairs := full / 2
		for g := range pairs {
			j := 16 * g
			dq16(d[j:j+16:j+16], m[j:j+16:j+16], archsimd.BroadcastFloat32x8(scales[e[2*g]]), archsimd.BroadcastFloat32x8(scales[e[2*g+1]]), hi, perm)
		}
		return 16 * pairs
	}
	for g := range full {
		s := archsimd.BroadcastFloat32x8(scales[e[g]])
		for j := g * gs; j < (g+1)*gs; j += 16 {
			dq16(d[j:j+16:j+16], m[j:j+16:j+16], s, s, hi, perm)
		}
	}
	return full * gs
}

// dq16 decodes 16 mantissas: the first 8 with scale a, the next 8 with b.
func dq16(d []uint16, x []int8, a, b archsimd.Float32x8, hi archsimd.Int8x16, perm archsimd.Uint32x8) {
	v := archsimd.LoadInt8x16Slice(x)
	lo := v.ExtendLo8ToInt32().ConvertToFloat32().Mul(a).AsUint32x8().ShiftAllRight(16).AsInt32x8()
	up := v.PermuteOrZero(hi).ExtendLo8ToInt32().ConvertToFloat32().Mul(b).AsUint32x8().ShiftAllRight(16).AsInt32x8()
	lo.SaturateToUint16ConcatGrouped(up).AsUint32x8().Permute(perm).AsUint16x16().StoreSlice(d)
}

// dequantize512 is the AVX-512 loop: 32 values per step, as two
// Float32x16 products whose upper halves one VPERMI2W gathers into 32
// bfloat16. It covers whole groups (for group sizes 8 and 16, whole sets
// of 4 and 2 groups) and returns how many values it decoded.
func dequantize512(d []uint16, m []int8, e []uint8, gs int) int {
	idx := archsimd.LoadUint16x32(&highHalves)
	blocks := len(m) / gs * gs / 32 // 32-value blocks made of whole groups
	switch gs {
	case 8:
		for k := range blocks {
			a := archsimd.BroadcastFloat32x16(scales[e[4*k]]).SetHi(archsimd.BroadcastFloat32x8(scales[e[4*k+1]]))
			b := archsimd.BroadcastFloat32x16(scales[e[4*k+2]]).SetHi(archsimd.BroadcastFloat32x8(scales[e[4*k+3]]))
			dq32(d, m, 32*k, a, b, idx)
		}
	case 16:
		for k := range blocks {
			dq32(d, m, 32*k, archsimd.BroadcastFloat32x16(scales[e[2*k]]), archsimd.BroadcastFloat32x16(scales[e[2*k+1]]), idx)
		}
	default:
		per := gs / 32
		for g := range blocks / per {
			s := archsimd.BroadcastFloat32x16(scales[e[g]])
			for j := g * gs; j < (g+1)*gs; j += 32 {
				dq32(d, m, j, s, s, idx)
			}
		}
	}
	return 32 * blocks
}

// dq32 decodes the 32 mantissas at j: the first 16 with scale a, the
// next 16 with b.
func dq32(d []uint16, m []int8, j int, a, b archsimd.Float32x16, idx archsimd.Uint16x32) {
	x := (*[32]int8)(m[j : j+32])
	lo := archsimd.LoadInt8x16((*[16]int8)(x[:16])).ExtendToInt32().ConvertToFloat32().Mul(a)
	hi := archsimd.LoadInt8x16((*[16]int8)(x[16:])).ExtendToInt32().ConvertToFloat32().Mul(b)
	lo.AsUint16x32().ConcatPermute(hi.AsUint16x32(), idx).Store((*[32]uint16)(d[j : j+32]))
}
