//go:build amd64 && goexperiment.simd

package train

import "simd/archsimd"

// hasAVX2 selects the 8-wide AVX2 loop of applyVec.
var hasAVX2 = archsimd.X86.AVX2()

// applyVec is apply on the longest prefix of p that is a multiple of 8
// elements, 8 at a time with AVX2 (the same float32 operations as
// applyScalar, without fused multiply-adds); it returns the prefix length
// (0 without AVX2).
func (c adamConsts) applyVec(p, g, m, v []float32) int {
	if !hasAVX2 {
		return 0
	}
	n := len(p) &^ 7
	var (
		coef, b1, b2 = archsimd.BroadcastFloat32x8(c.coef), archsimd.BroadcastFloat32x8(c.b1), archsimd.BroadcastFloat32x8(c.b2)
		nb1, nb2     = archsimd.BroadcastFloat32x8(c.nb1), archsimd.BroadcastFloat32x8(c.nb2)
		d1, d2       = archsimd.BroadcastFloat32x8(c.debias1), archsimd.BroadcastFloat32x8(c.debias2)
		eps, lr      = archsimd.BroadcastFloat32x8(c.eps), archsimd.BroadcastFloat32x8(c.lr)
		decay        = archsimd.BroadcastFloat32x8(c.decay)
		zero         = archsimd.BroadcastFloat32x8(0)
	)
	for j := 0; j < n; j += 8 {
		gj := zero
		if g != nil {
			gj = archsimd.LoadFloat32x8Slice(g[j:]).Mul(coef)
		}
		mj := b1.Mul(archsimd.LoadFloat32x8Slice(m[j:])).Add(nb1.Mul(gj))
		vj := b2.Mul(archsimd.LoadFloat32x8Slice(v[j:])).Add(nb2.Mul(gj.Mul(gj)))
		mj.StoreSlice(m[j:])
		vj.StoreSlice(v[j:])
		den := vj.Mul(d2).Sqrt().Add(eps)
		step := lr.Mul(mj.Mul(d1)).Div(den)
		pj := archsimd.LoadFloat32x8Slice(p[j:])
		if c.decay != 0 {
			step = step.Add(lr.Mul(pj.Mul(decay)))
		}
		pj.Sub(step).StoreSlice(p[j:])
	}
	return n
}
