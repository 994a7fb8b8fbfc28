package mxint8

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes/bfloat16"
)

// DequantizeReference decodes p to bfloat16 with the lab's CPU loop
// (dequantize1d_host, spec §6.11), bit for bit:
//
//	sign = uint16(x & 0x80) << 8 ; exp = uint16(E) << 7
//	mabs = |x| ; frac = uint16((mabs & 0x3F) << 1)
//	out  = bf16(sign | exp | frac)   // ±2^(E−127)·(1 + (mabs&63)/64)
//	bias = bf16(sign | exp)          // ±2^(E−127)
//	y    = mabs & 0x40 ? out : out − bias
//
// Bit 6 of |m| plays the role of bfloat16's implicit leading one. The
// subtraction is bfloat16's (in float32, rounded back to nearest even), as
// c10::BFloat16 does; it is exact on canonical encodings.
func DequantizeReference(p *Packed) []bfloat16.BFloat16 {
	out := make([]bfloat16.BFloat16, p.Len())
	for i, x := range p.mantissas {
		out[i] = bitTrick(x, p.exponents[i/p.groupSize])
	}
	return out
}

// bitTrick is one step of the lab's loop.
func bitTrick(x int8, e uint8) bfloat16.BFloat16 {
	sign := uint16(uint8(x)&0x80) << 8
	exp := uint16(e) << 7
	mabs := uint16(abs8(x)) // |−128| = 128: only bit 7, as in C
	frac := (mabs & 0x3F) << 1
	out := bfloat16.BFloat16(sign | exp | frac)
	if mabs&0x40 != 0 {
		return out
	}
	bias := bfloat16.BFloat16(sign | exp)
	return bfloat16.FromFloat32(out.Float32() - bias.Float32())
}

func abs8(x int8) int {
	if x < 0 {
		return -int(x)
	}
	return int(x)
}

// DequantizeFormula decodes p to bfloat16 as m/64·2^(E−127), computed
// exactly in float64 (math.Ldexp) and converted to bfloat16 through
// float32 (both conversions exact on canonical encodings, whose values
// have at most 7 significant bits).
func DequantizeFormula(p *Packed) []bfloat16.BFloat16 {
	out := make([]bfloat16.BFloat16, p.Len())
	for i, m := range p.mantissas {
		v := math.Ldexp(float64(m)/64, int(p.exponents[i/p.groupSize])-ExponentBias)
		out[i] = bfloat16.FromFloat64(v)
	}
	return out
}

// Dequantize decodes p into dst (len(dst) must be p.Len()) with the fast
// kernel: per group, y = upper 16 bits of float32(m)·2^(E−133), 32 values
// at a time with AVX-512 or 16 with AVX2 where the build has SIMD
// (GOEXPERIMENT=simd on amd64) and the CPU supports it, else a scalar
// loop. It is bit-exact with
// DequantizeReference and DequantizeFormula.
func Dequantize(dst []bfloat16.BFloat16, p *Packed) error {
	if p == nil {
		return fmt.Errorf("mxint8: dequantize: the packed tensor is nil")
	}
	if len(dst) != p.Len() {
		return fmt.Errorf("mxint8: dequantize: destination holds %d values for %d packed ones (allowed: exactly %d)", len(dst), p.Len(), p.Len())
	}
	dequantize(dst, p.mantissas, p.exponents, p.groupSize)
	return nil
}

// DequantizeNew is Dequantize into a new slice.
func DequantizeNew(p *Packed) []bfloat16.BFloat16 {
	out := make([]bfloat16.BFloat16, p.Len())
	dequantize(out, p.mantissas, p.exponents, p.groupSize)
	return out
}

// dequantize is the fast kernel: the vector prefix (full groups) then the
// scalar rest.
func dequantize(dst []bfloat16.BFloat16, m []int8, e []uint8, gs int) {
	done := dequantizeVec(dst, m, e, gs)
	dequantizeScalar(dst[done:], m[done:], e[done/gs:], gs)
}

// dequantizeScalar is the kernel's scalar loop, unrolled by 8 within a
// group (every group size is a multiple of 8; the last may be partial). m
// starts at a group boundary.
func dequantizeScalar(dst []bfloat16.BFloat16, m []int8, e []uint8, gs int) {
	for g := 0; g*gs < len(m); g++ {
		s := scales[e[g]]
		lo, hi := g*gs, min((g+1)*gs, len(m))
		d, x := dst[lo:hi], m[lo:hi]
		i := 0
		for ; i+8 <= len(x); i += 8 {
			d, x := d[i:i+8:i+8], x[i:i+8:i+8]
			d[0] = bf16Of(x[0], s)
			d[1] = bf16Of(x[1], s)
			d[2] = bf16Of(x[2], s)
			d[3] = bf16Of(x[3], s)
			d[4] = bf16Of(x[4], s)
			d[5] = bf16Of(x[5], s)
			d[6] = bf16Of(x[6], s)
			d[7] = bf16Of(x[7], s)
		}
		for ; i < len(x); i++ {
			d[i] = bf16Of(x[i], s)
		}
	}
}

// bf16Of is m·scale truncated to bfloat16 (exact: the product has at most
// 7 significant bits).
func bf16Of(m int8, scale float32) bfloat16.BFloat16 {
	return bfloat16.BFloat16(math.Float32bits(float32(m)*scale) >> 16)
}
