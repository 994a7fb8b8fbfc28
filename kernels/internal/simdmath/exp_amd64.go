//go:build amd64 && goexperiment.simd

// Package simdmath holds the vector math the kernels share: e^x on 8 and
// 16 float32 lanes.
package simdmath

import "simd/archsimd"

// Constants of exp: x = k·ln2 + r with |r| ≤ ln2/2 and k = round(x·log₂e);
// eʳ by Cephes' expf polynomial (relative error ≤ 2 ulp); 2ᵏ built in the
// exponent bits. Arguments below expLo (where 2ᵏ would leave the normal
// range) give 0, which also makes exp(-Inf) = 0.
const (
	expLo    = -87.33654
	expHi    = 88.0
	log2e    = 1.44269504088896341
	ln2Hi    = 0.693359375
	ln2Lo    = -2.12194440e-4
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
	expBias  = 127
	mantBits = 23
)

// Exp8 is e^x on 8 lanes (AVX2+FMA).
func Exp8(x archsimd.Float32x8) archsimd.Float32x8 {
	b := archsimd.BroadcastFloat32x8
	lo := b(expLo)
	valid := x.GreaterEqual(lo)
	x = x.Max(lo).Min(b(expHi))
	k := x.Mul(b(log2e)).RoundToEven()
	r := k.MulAdd(b(-ln2Hi), x)
	r = k.MulAdd(b(-ln2Lo), r)
	y := b(expP0).MulAdd(r, b(expP1))
	y = y.MulAdd(r, b(expP2))
	y = y.MulAdd(r, b(expP3))
	y = y.MulAdd(r, b(expP4))
	y = y.MulAdd(r, b(expP5))
	y = y.MulAdd(r.Mul(r), r.Add(b(1)))
	pow2 := k.ConvertToInt32().Add(archsimd.BroadcastInt32x8(expBias)).ShiftAllLeft(mantBits).AsFloat32x8()
	return y.Mul(pow2).Masked(valid)
}

// Exp16 is Exp8 on 16 lanes (AVX-512); 2ᵏ is applied with VSCALEFPS.
func Exp16(x archsimd.Float32x16) archsimd.Float32x16 {
	b := archsimd.BroadcastFloat32x16
	lo := b(expLo)
	valid := x.GreaterEqual(lo)
	x = x.Max(lo).Min(b(expHi))
	k := x.Mul(b(log2e)).RoundToEvenScaled(0)
	r := k.MulAdd(b(-ln2Hi), x)
	r = k.MulAdd(b(-ln2Lo), r)
	y := b(expP0).MulAdd(r, b(expP1))
	y = y.MulAdd(r, b(expP2))
	y = y.MulAdd(r, b(expP3))
	y = y.MulAdd(r, b(expP4))
	y = y.MulAdd(r, b(expP5))
	y = y.MulAdd(r.Mul(r), r.Add(b(1)))
	return y.Scale(k).Masked(valid)
}
