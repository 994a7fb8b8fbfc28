package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/sdpa"
)

// The tolerances of issue 16 against the float64 reference (max abs error,
// inputs drawn from N(0, 1)).
const (
	sdpaTol32 = 1e-5
	sdpaTol16 = 2e-3
)

// sdpaCase is an attention call with its inputs (float64 values, already
// rounded to the dtype) and mask.
type sdpaCase struct {
	name    string
	c       SDPAConfig
	q, k, v []float64
	mask    []float32
}

// newSDPACase draws q, k, v from N(0, 1) and the mask with fill (nil: none).
func newSDPACase(name string, c SDPAConfig, rng *rand.Rand, fill func(mask []float32, dims []int)) sdpaCase {
	tc := sdpaCase{name: name, c: c}
	draw := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			f := float32(rng.NormFloat64())
			if c.DType == dtypes.Float16 {
				f = float16.FromFloat32(f).Float32()
			}
			x[i] = float64(f)
		}
		return x
	}
	tc.q = draw(c.Batch * c.Heads * c.SeqQ * c.HeadDim)
	tc.k = draw(c.Batch * c.Heads * c.SeqK * c.HeadDim)
	tc.v = draw(c.Batch * c.Heads * c.SeqK * c.HeadDim)
	if c.MaskDims != nil {
		tc.mask = make([]float32, c.MaskDims[0]*c.MaskDims[1]*c.MaskDims[2]*c.MaskDims[3])
		fill(tc.mask, c.MaskDims)
	}
	return tc
}

// reference is sdpa.Reference on the case: with its key-padding mask
// (KeyBias) for masks [B|1, 1, 1, Sk], one query row at a time (the mask's
// row as KeyBias) for the other forms.
func (tc sdpaCase) reference(t testing.TB) []float64 {
	t.Helper()
	c := tc.c
	scale := float64(c.Scale)
	if scale == 0 {
		scale = float64(float32(1 / math.Sqrt(float64(c.HeadDim))))
	}
	st := c.MaskStrides()
	if tc.mask == nil || (st[1] == 0 && st[2] == 0 && c.MaskDims[3] == c.SeqK) {
		o := &sdpa.Options{Scale: scale}
		if tc.mask != nil {
			o.KeyBias = make([]float32, c.Batch*c.SeqK)
			for b := 0; b < c.Batch; b++ {
				copy(o.KeyBias[b*c.SeqK:], tc.mask[int64(b)*st[0]:][:c.SeqK])
			}
		}
		out, err := sdpa.Reference(tc.q, tc.k, tc.v, sdpa.NewShape(c.Batch, c.Heads, c.SeqQ, c.SeqK, c.HeadDim), o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	D, Sq, Sk := c.HeadDim, c.SeqQ, c.SeqK
	out := make([]float64, len(tc.q))
	bias := make([]float32, Sk)
	for b := 0; b < c.Batch; b++ {
		for h := 0; h < c.Heads; h++ {
			bh := b*c.Heads + h
			kh, vh := tc.k[bh*Sk*D:(bh+1)*Sk*D], tc.v[bh*Sk*D:(bh+1)*Sk*D]
			for i := 0; i < Sq; i++ {
				for j := range bias {
					bias[j] = tc.mask[int64(b)*st[0]+int64(h)*st[1]+int64(i)*st[2]+int64(j)*st[3]]
				}
				row, err := sdpa.Reference(tc.q[(bh*Sq+i)*D:][:D], kh, vh, sdpa.NewShape(1, 1, 1, Sk, D), &sdpa.Options{Scale: scale, KeyBias: bias})
				if err != nil {
					t.Fatal(err)
				}
				copy(out[(bh*Sq+i)*D:], row)
			}
		}
	}
	return out
}

// runOnHost runs the kernel's host build on the case.
func (tc sdpaCase) runOnHost(t testing.TB) []float64 {
	t.Helper()
	got := make([]float64, len(tc.q))
	if tc.c.DType == dtypes.Float16 {
		conv := func(x []float64) []uint16 {
			h := make([]uint16, len(x))
			for i, f := range x {
				h[i] = uint16(float16.FromFloat32(float32(f)))
			}
			return h
		}
		out, err := sdpaOnHost(tc.c, conv(tc.q), conv(tc.k), conv(tc.v), tc.mask)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range out {
			got[i] = float64(float16.Float16(h).Float32())
		}
		return got
	}
	conv := func(x []float64) []float32 {
		f := make([]float32, len(x))
		for i := range x {
			f[i] = float32(x[i])
		}
		return f
	}
	out, err := sdpaOnHost(tc.c, conv(tc.q), conv(tc.k), conv(tc.v), tc.mask)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range out {
		got[i] = float64(f)
	}
	return got
}

// maxAbsError is the largest |got - want| (+Inf on a NaN).
func maxAbsError(got, want []float64) (float64, int) {
	worst, at := 0.0, 0
	for i := range want {
		e := math.Abs(got[i] - want[i])
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > worst {
			worst, at = e, i
		}
	}
	return worst, at
}

// The masks of the tests.
var (
	negInf = float32(math.Inf(-1))
	// padding masks keys from a per-batch length on (every key of batch 1
	// with -Inf: zero rows; every key of batch 2 with float32's lowest, as
	// BERT's (1 - m)·min: a uniform average).
	padding = func(mask []float32, dims []int) {
		for b := 0; b < dims[0]; b++ {
			for j := 0; j < dims[3]; j++ {
				switch {
				case b == 1:
					mask[b*dims[3]+j] = negInf
				case b == 2:
					mask[b*dims[3]+j] = -math.MaxFloat32
				case j >= dims[3]-5*b-3:
					mask[b*dims[3]+j] = negInf
				}
			}
		}
	}
	// causal is the lower triangle with -Inf above, with query row 3's
	// keys all masked.
	causal = func(mask []float32, dims []int) {
		for x := range mask {
			i, j := x/dims[3]%dims[2], x%dims[3]
			if j > i || i == 3 {
				mask[x] = negInf
			}
		}
	}
	// random is a finite bias from N(0, 2) with a tenth of the entries -Inf.
	random = func(rng *rand.Rand) func([]float32, []int) {
		return func(mask []float32, _ []int) {
			for x := range mask {
				mask[x] = float32(2 * rng.NormFloat64())
				if rng.IntN(10) == 0 {
					mask[x] = negInf
				}
			}
		}
	}
)

// sdpaCases are the shapes, masks and scales the kernel is tested on: Sq ≠
// Sk, lengths that are not multiples of the tiles, head_dim 1–128, several
// batch·heads, every mask form, a non-default scale.
func sdpaCases(dt dtypes.DType) []sdpaCase {
	rng := rand.New(rand.NewPCG(11, uint64(dt)))
	cfg := func(b, h, sq, sk, d int, mask ...int) SDPAConfig {
		c := SDPAConfig{Batch: b, Heads: h, SeqQ: sq, SeqK: sk, HeadDim: d, DType: dt}
		if mask != nil {
			c.MaskDims = mask
		}
		return c
	}
	scaled := cfg(2, 3, 65, 33, 64)
	scaled.Scale = 0.37
	return []sdpaCase{
		newSDPACase("tiny", cfg(1, 1, 5, 7, 32), rng, nil),
		newSDPACase("sq≠sk d64", cfg(2, 3, 100, 77, 64), rng, nil),
		newSDPACase("d128 long keys", cfg(1, 2, 70, 200, 128), rng, nil),
		newSDPACase("d40", cfg(2, 1, 64, 64, 40), rng, nil),
		newSDPACase("d1", cfg(1, 1, 3, 40, 1), rng, nil),
		newSDPACase("d100", cfg(1, 2, 65, 70, 100), rng, nil),
		newSDPACase("one query", cfg(3, 2, 1, 129, 32), rng, nil),
		newSDPACase("scale 0.37", scaled, rng, nil),
		newSDPACase("padding d64", cfg(4, 2, 50, 45, 64, 4, 1, 1, 45), rng, padding),
		newSDPACase("padding d128", cfg(3, 2, 64, 96, 128, 3, 1, 1, 96), rng, padding),
		newSDPACase("causal [1 1 Sq Sk]", cfg(2, 2, 40, 70, 32, 1, 1, 40, 70), rng, causal),
		newSDPACase("random [B H Sq Sk]", cfg(2, 3, 33, 50, 64, 2, 3, 33, 50), rng, random(rng)),
		newSDPACase("random [B 1 Sq Sk]", cfg(2, 2, 70, 31, 128, 2, 1, 70, 31), rng, random(rng)),
		newSDPACase("random [1 H 1 Sk]", cfg(2, 2, 9, 40, 32, 1, 2, 1, 40), rng, random(rng)),
	}
}

// TestHostSDPA runs the SDPA kernel's host build against sdpa.Reference:
// within 1e-5 (float32) and 2e-3 (float16), fully masked rows included.
func TestHostSDPA(t *testing.T) {
	if !HostBuild {
		t.Skip("built without cgo: the kernel's host build needs a C compiler")
	}
	checkSDPACases(t, "on the host", func(tc sdpaCase) []float64 { return tc.runOnHost(t) })
}

// TestHostSDPAMaskedRows checks the rows the reference defines specially:
// keys all -Inf give zeros, keys all float32's lowest a plain average.
func TestHostSDPAMaskedRows(t *testing.T) {
	if !HostBuild {
		t.Skip("built without cgo: the kernel's host build needs a C compiler")
	}
	tc := newSDPACase("padding", SDPAConfig{Batch: 3, Heads: 1, SeqQ: 2, SeqK: 40, HeadDim: 32, DType: dtypes.Float32, MaskDims: []int{3, 1, 1, 40}}, rand.New(rand.NewPCG(1, 2)), padding)
	got := tc.runOnHost(t)
	for x := 2 * 32; x < 4*32; x++ { // batch 1
		if got[x] != 0 {
			t.Fatalf("batch 1 (every key -Inf): output %d is %v, want 0", x, got[x])
		}
	}
	for d := 0; d < 32; d++ { // batch 2, row 0
		var mean float64
		for j := 0; j < 40; j++ {
			mean += tc.v[(2*40+j)*32+d] / 40
		}
		if e := math.Abs(got[4*32+d] - mean); e > sdpaTol32 {
			t.Fatalf("batch 2 (every key float32's lowest): column %d is %v, want the mean of v %v", d, got[4*32+d], mean)
		}
	}
}

// TestHostHalfConversions checks the kernel's float16 conversions: every
// half widens exactly, and float32 values round to the nearest half, ties to
// even (the midpoints between halves, subnormal ones included, and random
// values).
func TestHostHalfConversions(t *testing.T) {
	if !HostBuild {
		t.Skip("built without cgo: the kernel's host build needs a C compiler")
	}
	for h := 0; h < 1<<16; h++ {
		got, want := widenOnHost(uint16(h)), float16.Float16(h).Float32()
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("half %#04x widens to %v, want %v", h, got, want)
		}
	}
	w := func(h uint16) float64 { return float64(widenOnHost(h)) }
	check := func(f float32) {
		h := halfOnHost(f)
		if math.IsNaN(float64(f)) {
			if h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
				t.Fatalf("NaN rounds to %#04x", h)
			}
			return
		}
		a := math.Abs(float64(f))
		m := h & 0x7fff
		if a >= 65520 {
			if m != 0x7c00 {
				t.Fatalf("%v rounds to %#04x, want infinity", f, h)
			}
			return
		}
		if (h&0x8000 != 0) != math.Signbit(float64(f)) || m >= 0x7c00 {
			t.Fatalf("%v rounds to %#04x", f, h)
		}
		e := math.Abs(a - w(m))
		for _, n := range []uint16{m - 1, m + 1} {
			if n > 0x7bff {
				continue
			}
			if en := math.Abs(a - w(n)); en < e || (en == e && m&1 == 1) {
				t.Fatalf("%v rounds to %#04x (%v), but %#04x (%v) is nearer or an even tie", f, h, w(m), n, w(n))
			}
		}
	}
	for h := uint16(0); h < 0x7bff; h++ {
		mid := float32((w(h) + w(h+1)) / 2)
		check(mid)
		check(-mid)
		check(widenOnHost(h))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 1_000_000 {
		check(math.Float32frombits(rng.Uint32()))
	}
	for _, f := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, float32(math.Inf(1)), float32(math.NaN()), 1e-8, 2.98e-8, 2.99e-8} {
		check(f)
	}
}

// TestHostExp2 checks the kernel's exp2 on x ≤ 0 against math.Exp2: within
// 4 float32 ulp down to -126, 0 below.
func TestHostExp2(t *testing.T) {
	if !HostBuild {
		t.Skip("built without cgo: the kernel's host build needs a C compiler")
	}
	worst := 0.0
	for i := 0; i <= 1_260_000; i++ {
		x := -float32(i) / 10000
		got, want := float64(exp2OnHost(x)), math.Exp2(float64(x))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 4*0x1p-24 {
		t.Errorf("relative error %.3g", worst)
	}
	for _, x := range []float32{-126.5, -1000, float32(math.Inf(-1))} {
		if got := exp2OnHost(x); got != 0 {
			t.Errorf("exp2(%v) = %v, want 0", x, got)
		}
	}
	t.Logf("exp2: max relative error %.3g", worst)
}

func ExampleSDPACall() {
	call, _ := SDPACall(SDPAConfig{Batch: 32, Heads: 8, SeqQ: 128, SeqK: 128, HeadDim: 64, DType: dtypes.Float16, MaskDims: []int{32, 1, 1, 128}})
	fmt.Println(call.Config)
	// Output: b=32 h=8 sq=128 sk=128 d=64 dtype=f16 scale=0x3e000000 mask=128,0,0,1
}

// checkSDPACases runs every case of both dtypes with run and checks it
// against sdpa.Reference: within 1e-5 (float32) and 2e-3 (float16).
func checkSDPACases(t *testing.T, where string, run func(tc sdpaCase) []float64) {
	t.Helper()
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float16} {
		tol := sdpaTol32
		if dt == dtypes.Float16 {
			tol = sdpaTol16
		}
		worstAll := 0.0
		cases := sdpaCases(dt)
		for _, tc := range cases {
			want := tc.reference(t)
			got := run(tc)
			worst, at := maxAbsError(got, want)
			worstAll = max(worstAll, worst)
			if worst > tol {
				t.Errorf("%s %s %+v: max abs error %.3g at %d (got %v, want %v), tolerance %g", dt, tc.name, tc.c, worst, at, got[at], want[at], tol)
			}
		}
		t.Logf("%s %s: max abs error %.3g over %d cases", dt, where, worstAll, len(cases))
	}
}
