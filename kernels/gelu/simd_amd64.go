//go:build amd64 && goexperiment.simd

package gelu

import (
	"simd/archsimd"

	"github.com/gomase/gomase/kernels/internal/simdmath"
)

func init() {
	switch {
	case archsimd.X86.AVX512():
		kernel, Level = gelu16, "avx512"
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		kernel, Level = gelu8, "avx2+fma"
	}
}

// gelu16 is the kernel on 16 lanes (AVX-512).
func gelu16(dst, src []float32) {
	b := archsimd.BroadcastFloat32x16
	n := len(src)
	dst = dst[:n]
	sign := archsimd.BroadcastInt32x16(-1 << 31)
	j := 0
	for ; j+16 <= n; j += 16 {
		x := archsimd.LoadFloat32x16Slice(src[j:])
		// z = |x|/√2 and z² carried as high and low parts (FMA error terms), so
		// that exp(−z²) keeps its relative accuracy in the tail.
		ax := x.AsInt32x16().AndNot(sign).AsFloat32x16()
		z := ax.Mul(b(invSqrt2Hi))
		zLo := ax.MulAdd(b(invSqrt2Hi), b(0).Sub(z)).Add(ax.Mul(b(invSqrt2Lo)))
		zz := z.Mul(z)
		zzLo := z.MulAdd(z, b(0).Sub(zz)).Add(z.Mul(zLo).Mul(b(2)))
		t := b(2).Div(z.Add(b(2)))
		p := b(c9).MulAdd(t, b(c8))
		p = p.MulAdd(t, b(c7))
		p = p.MulAdd(t, b(c6))
		p = p.MulAdd(t, b(c5))
		p = p.MulAdd(t, b(c4))
		p = p.MulAdd(t, b(c3))
		p = p.MulAdd(t, b(c2))
		p = p.MulAdd(t, b(c1))
		p = p.MulAdd(t, b(c0))
		half := t.Mul(b(0.5)).Mul(simdmath.Exp16(p.Sub(zz).Sub(zzLo)))
		phi := half.Merge(b(1).Sub(half), x.Less(b(0))) // half where x < 0
		x.Mul(phi).StoreSlice(dst[j:])
	}
	for ; j < n; j++ {
		dst[j] = scalar(src[j])
	}
}

// gelu8 is the kernel on 8 lanes (AVX2+FMA).
func gelu8(dst, src []float32) {
	b := archsimd.BroadcastFloat32x8
	n := len(src)
	dst = dst[:n]
	sign := archsimd.BroadcastInt32x8(-1 << 31)
	j := 0
	for ; j+8 <= n; j += 8 {
		x := archsimd.LoadFloat32x8Slice(src[j:])
		// z = |x|/√2 and z² carried as high and low parts (FMA error terms), so
		// that exp(−z²) keeps its relative accuracy in the tail.
		ax := x.AsInt32x8().AndNot(sign).AsFloat32x8()
		z := ax.Mul(b(invSqrt2Hi))
		zLo := ax.MulAdd(b(invSqrt2Hi), b(0).Sub(z)).Add(ax.Mul(b(invSqrt2Lo)))
		zz := z.Mul(z)
		zzLo := z.MulAdd(z, b(0).Sub(zz)).Add(z.Mul(zLo).Mul(b(2)))
		t := b(2).Div(z.Add(b(2)))
		p := b(c9).MulAdd(t, b(c8))
		p = p.MulAdd(t, b(c7))
		p = p.MulAdd(t, b(c6))
		p = p.MulAdd(t, b(c5))
		p = p.MulAdd(t, b(c4))
		p = p.MulAdd(t, b(c3))
		p = p.MulAdd(t, b(c2))
		p = p.MulAdd(t, b(c1))
		p = p.MulAdd(t, b(c0))
		half := t.Mul(b(0.5)).Mul(simdmath.Exp8(p.Sub(zz).Sub(zzLo)))
		phi := half.Merge(b(1).Sub(half), x.Less(b(0))) // half where x < 0
		x.Mul(phi).StoreSlice(dst[j:])
	}
	for ; j < n; j++ {
		dst[j] = scalar(src[j])
	}
}
