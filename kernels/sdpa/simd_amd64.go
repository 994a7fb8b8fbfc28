//go:build amd64 && goexperiment.simd

package sdpa

import (
	"simd/archsimd"
	"unsafe"

	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/internal/simdmath"
)

// SIMD versions of the micro-kernels (kernels.go), selected at init from
// the CPU's features: AVX2+FMA (8 float32 lanes) or AVX-512 (16 lanes).
func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		kernelSets["avx2+fma"] = useAVX2Kernels
	}
	switch {
	case archsimd.X86.AVX512():
		setTransposeIndices()
		avx512Kernels.use()
	case archsimd.X86.AVX2() && archsimd.X86.FMA():
		avx2Kernels.use()
	}
}

var (
	avx2Kernels = kernelSet{scores4AVX2, pv4AVX2, rowMaxAVX2, expSumAVX2, scaleAddAVX2, scaleAddMaxAVX2,
		halfToFloat32AVX2, float32ToHalfGo, transposeGo, "avx2+fma"}
	avx512Kernels = kernelSet{scores4AVX512, pv4AVX512, rowMaxAVX2, expSumAVX512, scaleAddAVX2, scaleAddMaxAVX512,
		halfToFloat32AVX2, float32ToHalfAVX512, transposeAVX512, "avx512"}
)

// useAVX2Kernels switches to the AVX2+FMA kernels; it returns a function
// restoring the previous ones.
func useAVX2Kernels() (restore func()) { return avx2Kernels.use() }

type f8 = archsimd.Float32x8

func load8(s []float32) f8 { return archsimd.LoadFloat32x8Slice(s) }
func bcast8(x float32) f8  { return archsimd.BroadcastFloat32x8(x) }

// storeRow8 stores a as elements j..j+7 of row, those below n only.
func storeRow8(row []float32, j, n int, a f8) {
	if j+8 <= n {
		a.StoreSlice(row[j:])
	} else if j < n {
		// Not StoreSlicePart: its masked store through a *[8]float32 trips
		// checkptr (go test -race) at the end of an allocation.
		var tmp [8]float32
		a.Store(&tmp)
		copy(row[j:n], tmp[:])
	}
}

// The kernels below keep their accumulators in registers: the Go compiler
// allocates 15 vector registers, so a 4-row × 2-vector block (8
// accumulators, 2 loaded vectors, 4 broadcasts) is the largest that does
// not spill. Each inner loop is its own function so that nothing else is
// live across it.

func scores4AVX2(dst, q *rows4, kt []float32, ldk, D, n int) {
	q0, q1, q2, q3 := q[0][:D], q[1][:D], q[2][:D], q[3][:D]
	var acc [8]f8
	for j := 0; j < n; j += 16 {
		scoresBlockAVX2(&acc, q0, q1, q2, q3, kt[j:], ldk)
		for r := range 4 {
			storeRow8(dst[r][:n], j, n, acc[2*r])
			storeRow8(dst[r][:n], j+8, n, acc[2*r+1])
		}
	}
}

// scoresBlockAVX2 sets acc[2r], acc[2r+1] to Σ_d q_r[d]·kt[d·ldk : d·ldk+16]
// (kt rows readable for 16 elements).
//
//go:noinline
func scoresBlockAVX2(acc *[8]f8, q0, q1, q2, q3, kt []float32, ldk int) {
	q1, q2, q3 = q1[:len(q0)], q2[:len(q0)], q3[:len(q0)]
	zero := bcast8(0)
	a00, a01, a10, a11, a20, a21, a30, a31 := zero, zero, zero, zero, zero, zero, zero, zero
	off := 0
	for d := range q0 {
		row := kt[off : off+16]
		off += ldk
		k0, k1 := load8(row), load8(row[8:])
		b := bcast8(q0[d])
		a00, a01 = k0.MulAdd(b, a00), k1.MulAdd(b, a01)
		b = bcast8(q1[d])
		a10, a11 = k0.MulAdd(b, a10), k1.MulAdd(b, a11)
		b = bcast8(q2[d])
		a20, a21 = k0.MulAdd(b, a20), k1.MulAdd(b, a21)
		b = bcast8(q3[d])
		a30, a31 = k0.MulAdd(b, a30), k1.MulAdd(b, a31)
	}
	*acc = [8]f8{a00, a01, a10, a11, a20, a21, a30, a31}
}

func pv4AVX2(o *rows4, corr *[4]float32, p *rows4, v []float32, ldv, n, dp int) {
	rescale(o, corr, dp)
	p0, p1, p2, p3 := p[0][:n], p[1][:n], p[2][:n], p[3][:n]
	for c := 0; c < dp; c += 16 {
		pvBlockAVX2(o[0][c:c+16], o[1][c:c+16], o[2][c:c+16], o[3][c:c+16], p0, p1, p2, p3, v[c:], ldv)
	}
}

// pvBlockAVX2 adds Σ_j p_r[j]·v[j·ldv : j·ldv+16] to o_r (16 elements).
//
//go:noinline
func pvBlockAVX2(o0, o1, o2, o3, p0, p1, p2, p3, v []float32, ldv int) {
	p1, p2, p3 = p1[:len(p0)], p2[:len(p0)], p3[:len(p0)]
	o0, o1, o2, o3 = o0[:16], o1[:16], o2[:16], o3[:16]
	a00, a01 := load8(o0), load8(o0[8:])
	a10, a11 := load8(o1), load8(o1[8:])
	a20, a21 := load8(o2), load8(o2[8:])
	a30, a31 := load8(o3), load8(o3[8:])
	off := 0
	for j := range p0 {
		row := v[off : off+16]
		off += ldv
		v0, v1 := load8(row), load8(row[8:])
		b := bcast8(p0[j])
		a00, a01 = v0.MulAdd(b, a00), v1.MulAdd(b, a01)
		b = bcast8(p1[j])
		a10, a11 = v0.MulAdd(b, a10), v1.MulAdd(b, a11)
		b = bcast8(p2[j])
		a20, a21 = v0.MulAdd(b, a20), v1.MulAdd(b, a21)
		b = bcast8(p3[j])
		a30, a31 = v0.MulAdd(b, a30), v1.MulAdd(b, a31)
	}
	a00.StoreSlice(o0)
	a01.StoreSlice(o0[8:])
	a10.StoreSlice(o1)
	a11.StoreSlice(o1[8:])
	a20.StoreSlice(o2)
	a21.StoreSlice(o2[8:])
	a30.StoreSlice(o3)
	a31.StoreSlice(o3[8:])
}

// rescale multiplies o[r][:dp] by corr[r] (clears it for 0, skips 1).
func rescale(o *rows4, corr *[4]float32, dp int) {
	for r, c := range corr {
		switch c {
		case 0:
			clear(o[r][:dp])
		case 1:
		default:
			scaleAddAVX2(o[r][:dp], o[r][:dp], c, nil)
		}
	}
}

func scaleAddMaxAVX2(dst, src []float32, a float32, b []float32) float32 {
	n := len(dst)
	src, b = src[:n], b[:n]
	av := bcast8(a)
	m := rowMaxGo(nil)
	j := 0
	if n >= 8 {
		mv := bcast8(m)
		for ; j+8 <= n; j += 8 {
			x := load8(src[j:]).MulAdd(av, load8(b[j:]))
			x.StoreSlice(dst[j:])
			mv = mv.Max(x)
		}
		h := mv.GetLo().Max(mv.GetHi())
		m = max(h.GetElem(0), h.GetElem(1), h.GetElem(2), h.GetElem(3))
	}
	for ; j < n; j++ {
		dst[j] = src[j]*a + b[j]
		m = max(m, dst[j])
	}
	return m
}

func rowMaxAVX2(x []float32) float32 {
	j, m := 0, rowMaxGo(nil)
	if len(x) >= 8 {
		acc := load8(x)
		for j = 8; j+8 <= len(x); j += 8 {
			acc = acc.Max(load8(x[j:]))
		}
		h := acc.GetLo().Max(acc.GetHi())
		m = max(h.GetElem(0), h.GetElem(1), h.GetElem(2), h.GetElem(3))
	}
	for ; j < len(x); j++ {
		m = max(m, x[j])
	}
	return m
}

func scaleAddAVX2(dst, src []float32, a float32, b []float32) {
	n := len(dst)
	src = src[:n]
	av := bcast8(a)
	j := 0
	if b == nil {
		for ; j+8 <= n; j += 8 {
			load8(src[j:]).Mul(av).StoreSlice(dst[j:])
		}
		for ; j < n; j++ {
			dst[j] = src[j] * a
		}
		return
	}
	b = b[:n]
	for ; j+8 <= n; j += 8 {
		load8(src[j:]).MulAdd(av, load8(b[j:])).StoreSlice(dst[j:])
	}
	for ; j < n; j++ {
		dst[j] = src[j]*a + b[j]
	}
}

// exp8 and exp16 are e^x (kernels/internal/simdmath).
func exp8(x f8) f8 { return simdmath.Exp8(x) }

func expSumAVX2(dst, src []float32, m float32) float32 {
	n := len(src)
	dst = dst[:n]
	mv := bcast8(m)
	acc := bcast8(0)
	j := 0
	for ; j+8 <= n; j += 8 {
		e := exp8(load8(src[j:]).Sub(mv))
		e.StoreSlice(dst[j:])
		acc = acc.Add(e)
	}
	h := acc.GetLo().Add(acc.GetHi())
	sum := (h.GetElem(0) + h.GetElem(1)) + (h.GetElem(2) + h.GetElem(3))
	if j < n {
		sum += expSumGo(dst[j:], src[j:], m)
	}
	return sum
}

type f16x = archsimd.Float32x16

func load16(s []float32) f16x { return archsimd.LoadFloat32x16Slice(s) }
func bcast16(x float32) f16x  { return archsimd.BroadcastFloat32x16(x) }

// storeRow16 stores a as elements j..j+15 of row, those below n only.
func storeRow16(row []float32, j, n int, a f16x) {
	if j+16 <= n {
		a.StoreSlice(row[j:])
	} else if j < n {
		var tmp [16]float32
		a.Store(&tmp)
		copy(row[j:n], tmp[:])
	}
}

func scores4AVX512(dst, q *rows4, kt []float32, ldk, D, n int) {
	q0, q1, q2, q3 := q[0][:D], q[1][:D], q[2][:D], q[3][:D]
	n16 := roundUp(n, 16)
	j := 0
	var acc [8]f16x
	for ; j+32 <= n16; j += 32 {
		scoresBlockAVX512(&acc, q0, q1, q2, q3, kt[j:], ldk)
		for r := range 4 {
			storeRow16(dst[r][:n], j, n, acc[2*r])
			storeRow16(dst[r][:n], j+16, n, acc[2*r+1])
		}
	}
	if j < n {
		var acc8 [8]f8
		scoresBlockAVX2(&acc8, q0, q1, q2, q3, kt[j:], ldk)
		for r := range 4 {
			storeRow8(dst[r][:n], j, n, acc8[2*r])
			storeRow8(dst[r][:n], j+8, n, acc8[2*r+1])
		}
	}
}

// scoresBlockAVX512 is scoresBlockAVX2 on 32 elements.
//
//go:noinline
func scoresBlockAVX512(acc *[8]f16x, q0, q1, q2, q3, kt []float32, ldk int) {
	q1, q2, q3 = q1[:len(q0)], q2[:len(q0)], q3[:len(q0)]
	zero := bcast16(0)
	a00, a01, a10, a11, a20, a21, a30, a31 := zero, zero, zero, zero, zero, zero, zero, zero
	off := 0
	for d := range q0 {
		row := kt[off : off+32]
		off += ldk
		k0, k1 := load16(row), load16(row[16:])
		b := bcast16(q0[d])
		a00, a01 = k0.MulAdd(b, a00), k1.MulAdd(b, a01)
		b = bcast16(q1[d])
		a10, a11 = k0.MulAdd(b, a10), k1.MulAdd(b, a11)
		b = bcast16(q2[d])
		a20, a21 = k0.MulAdd(b, a20), k1.MulAdd(b, a21)
		b = bcast16(q3[d])
		a30, a31 = k0.MulAdd(b, a30), k1.MulAdd(b, a31)
	}
	*acc = [8]f16x{a00, a01, a10, a11, a20, a21, a30, a31}
}

func pv4AVX512(o *rows4, corr *[4]float32, p *rows4, v []float32, ldv, n, dp int) {
	rescale(o, corr, dp)
	p0, p1, p2, p3 := p[0][:n], p[1][:n], p[2][:n], p[3][:n]
	c := 0
	for ; c+32 <= dp; c += 32 {
		pvBlockAVX512(o[0][c:c+32], o[1][c:c+32], o[2][c:c+32], o[3][c:c+32], p0, p1, p2, p3, v[c:], ldv)
	}
	if c < dp {
		pvBlockAVX2(o[0][c:c+16], o[1][c:c+16], o[2][c:c+16], o[3][c:c+16], p0, p1, p2, p3, v[c:], ldv)
	}
}

// pvBlockAVX512 is pvBlockAVX2 on 32 elements.
//
//go:noinline
func pvBlockAVX512(o0, o1, o2, o3, p0, p1, p2, p3, v []float32, ldv int) {
	p1, p2, p3 = p1[:len(p0)], p2[:len(p0)], p3[:len(p0)]
	o0, o1, o2, o3 = o0[:32], o1[:32], o2[:32], o3[:32]
	a00, a01 := load16(o0), load16(o0[16:])
	a10, a11 := load16(o1), load16(o1[16:])
	a20, a21 := load16(o2), load16(o2[16:])
	a30, a31 := load16(o3), load16(o3[16:])
	off := 0
	for j := range p0 {
		row := v[off : off+32]
		off += ldv
		v0, v1 := load16(row), load16(row[16:])
		b := bcast16(p0[j])
		a00, a01 = v0.MulAdd(b, a00), v1.MulAdd(b, a01)
		b = bcast16(p1[j])
		a10, a11 = v0.MulAdd(b, a10), v1.MulAdd(b, a11)
		b = bcast16(p2[j])
		a20, a21 = v0.MulAdd(b, a20), v1.MulAdd(b, a21)
		b = bcast16(p3[j])
		a30, a31 = v0.MulAdd(b, a30), v1.MulAdd(b, a31)
	}
	a00.StoreSlice(o0)
	a01.StoreSlice(o0[16:])
	a10.StoreSlice(o1)
	a11.StoreSlice(o1[16:])
	a20.StoreSlice(o2)
	a21.StoreSlice(o2[16:])
	a30.StoreSlice(o3)
	a31.StoreSlice(o3[16:])
}

func scaleAddMaxAVX512(dst, src []float32, a float32, b []float32) float32 {
	n := len(dst)
	src, b = src[:n], b[:n]
	if n < 16 {
		return scaleAddMaxAVX2(dst, src, a, b)
	}
	av := bcast16(a)
	mv := bcast16(rowMaxGo(nil))
	j := 0
	for ; j+16 <= n; j += 16 {
		x := load16(src[j:]).MulAdd(av, load16(b[j:]))
		x.StoreSlice(dst[j:])
		mv = mv.Max(x)
	}
	h8 := mv.GetLo().Max(mv.GetHi())
	h := h8.GetLo().Max(h8.GetHi())
	m := max(h.GetElem(0), h.GetElem(1), h.GetElem(2), h.GetElem(3))
	if j < n {
		m = max(m, scaleAddMaxAVX2(dst[j:], src[j:], a, b[j:]))
	}
	return m
}

func exp16(x f16x) f16x { return simdmath.Exp16(x) }

func expSumAVX512(dst, src []float32, m float32) float32 {
	n := len(src)
	dst = dst[:n]
	mv := bcast16(m)
	acc := bcast16(0)
	j := 0
	for ; j+16 <= n; j += 16 {
		e := exp16(load16(src[j:]).Sub(mv))
		e.StoreSlice(dst[j:])
		acc = acc.Add(e)
	}
	h8 := acc.GetLo().Add(acc.GetHi())
	h := h8.GetLo().Add(h8.GetHi())
	sum := (h.GetElem(0) + h.GetElem(1)) + (h.GetElem(2) + h.GetElem(3))
	if j < n {
		sum += expSumAVX2(dst[j:], src[j:], m)
	}
	return sum
}

// halfBits views a float16 slice as its bits.
func halfBits(x []float16.Float16) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.SliceData(x)), len(x))
}

// halfToFloat32AVX2 converts 8 values at a time: the float16 bits without
// the sign, shifted into a float32's place and multiplied by 2¹¹², give the
// value exactly, subnormals included (the multiplication rebiases the
// exponent); Inf and NaN get the all-ones exponent instead.
func halfToFloat32AVX2(dst []float32, src []float16.Float16) {
	n := len(src)
	dst = dst[:n]
	u := halfBits(src)
	var (
		absMask  = archsimd.BroadcastUint32x8(0x7fff)
		signMask = archsimd.BroadcastUint32x8(0x8000)
		maxFin   = archsimd.BroadcastInt32x8(0x7bff)
		expOnes  = archsimd.BroadcastUint32x8(0x7f800000)
		rebias   = bcast8(0x1p112)
	)
	j := 0
	for ; j+8 <= n; j += 8 {
		h := archsimd.LoadUint16x8Slice(u[j:]).ExtendToUint32()
		em := h.And(absMask)
		shifted := em.ShiftAllLeft(13)
		finite := shifted.AsFloat32x8().Mul(rebias)
		special := shifted.Or(expOnes).AsFloat32x8()
		f := special.Merge(finite, em.AsInt32x8().Greater(maxFin))
		f.AsUint32x8().Or(h.And(signMask).ShiftAllLeft(16)).AsFloat32x8().StoreSlice(dst[j:])
	}
	if j < n {
		halfToFloat32Go(dst[j:], src[j:])
	}
}

// float32ToHalfAVX512 rounds 8 values at a time when all 8 are in
// float16's normal range (the common case), by rebiasing the exponent and
// rounding the mantissa to nearest even with integer arithmetic; other
// groups (zeros, subnormals, overflow, Inf, NaN) go through halfFromF32.
// VPMOVDW, the narrowing to 16 bits, needs AVX-512.
func float32ToHalfAVX512(dst []float16.Float16, src []float32) {
	n := len(dst)
	src = src[:n]
	u := halfBits(dst)
	var (
		absMask  = archsimd.BroadcastUint32x8(0x7fffffff)
		lowest   = archsimd.BroadcastInt32x8(0x38800000 - 1) // 2⁻¹⁴ (smallest normal float16) - 1 ulp
		overflow = archsimd.BroadcastInt32x8(0x477ff000)     // 65520: rounds to Inf
		rebias   = archsimd.BroadcastUint32x8(112 << 23)
		round    = archsimd.BroadcastUint32x8(0x0fff)
		one      = archsimd.BroadcastUint32x8(1)
		signMask = archsimd.BroadcastUint32x8(0x8000)
	)
	j := 0
	for ; j+8 <= n; j += 8 {
		b := load8(src[j:]).AsUint32x8()
		a := b.And(absMask)
		ai := a.AsInt32x8()
		if ai.Greater(lowest).And(overflow.Greater(ai)).ToBits() != 0xff {
			float32ToHalfGo(dst[j:j+8], src[j:j+8])
			continue
		}
		m := a.Sub(rebias)
		m = m.Add(round).Add(m.ShiftAllRight(13).And(one))
		h := m.ShiftAllRight(13).Or(b.ShiftAllRight(16).And(signMask))
		h.TruncateToUint16().StoreSlice(u[j:])
	}
	if j < n {
		float32ToHalfGo(dst[j:], src[j:])
	}
}

// transposeIndices[s] are the VPERMI2PS indices of stage s of a 16×16
// transpose (block size b = 8 >> s): the low result takes a's elements
// where bit b of the position is clear and b's from b places back where
// it is set; the high result takes a's from b places on and b's.
// They are set by setTransposeIndices when the AVX-512 kernels are chosen
// (building a Uint32x16 needs AVX-512).
var transposeIndices [4][2]archsimd.Uint32x16

func setTransposeIndices() {
	for s := range 4 {
		b := uint32(8 >> s)
		var lo, hi [16]uint32
		for e := range uint32(16) {
			if e&b == 0 {
				lo[e], hi[e] = e, e+b
			} else {
				lo[e], hi[e] = 16+e-b, 16+e
			}
		}
		transposeIndices[s] = [2]archsimd.Uint32x16{archsimd.LoadUint32x16(&lo), archsimd.LoadUint32x16(&hi)}
	}
}

// transposeAVX512 transposes 16×16 blocks in registers (four stages of
// two-source permutes, each swapping off-diagonal sub-blocks), the edges
// that do not fill a block with transposeGo.
func transposeAVX512(kt []float32, ldk int, x []float32, ldx, n, D int) {
	n16, d16 := n&^15, D&^15
	for j0 := 0; j0 < n16; j0 += 16 {
		for d0 := 0; d0 < d16; d0 += 16 {
			transpose16(kt[d0*ldk+j0:], ldk, x[j0*ldx+d0:], ldx)
		}
	}
	if d16 < D { // the columns right of the blocks, in their rows
		transposeGo(kt[d16*ldk:], ldk, x[d16:], ldx, n16, D-d16)
	}
	if n16 < n { // the rows below the blocks, whole
		transposeGo(kt[n16:], ldk, x[n16*ldx:], ldx, n-n16, D)
	}
}

// transpose16 writes the 16×16 block of x (rows ldx apart) transposed
// into kt (rows ldk apart).
func transpose16(kt []float32, ldk int, x []float32, ldx int) {
	var r [16]f16x
	for t := range r {
		r[t] = load16(x[t*ldx:])
	}
	for s := range 4 {
		b := 8 >> s
		lo, hi := transposeIndices[s][0], transposeIndices[s][1]
		for i := range 16 {
			if i&b != 0 {
				continue
			}
			a, c := r[i], r[i+b]
			r[i], r[i+b] = a.ConcatPermute(c, lo), a.ConcatPermute(c, hi)
		}
	}
	for t := range r {
		r[t].StoreSlice(kt[t*ldk:])
	}
}
