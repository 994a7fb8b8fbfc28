package sdpa

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes/float16"
)

// Tolerances against the float64 Reference, for inputs drawn from N(0, 1)
// (outputs are convex combinations of v, so |out| ≲ 4):
//
//   - float32 kernels: |got - want| ≤ tol32Abs + tol32Rel·|want|. The scores
//     are float32 dot products of length head_dim (relative error
//     ~head_dim·2⁻²⁴), the vector exp is within 2 ulp, the sums are float32;
//     the largest error seen over these tests is about 3e-6.
//   - float16 kernels: the inputs are first rounded to float16 (the
//     reference gets the same rounded values), so only the final rounding
//     of the output to float16 is added: ≤ ½ ulp of float16 = 2⁻¹¹·|want|
//     plus the float32 error.
const (
	tol32Abs = 2e-5
	tol32Rel = 2e-5
	tol16Rel = 1.0 / 2048
)

type testCase struct {
	name  string
	shape Shape
	opts  func(s Shape, rng *rand.Rand) *Options
}

func noOpts(Shape, *rand.Rand) *Options { return nil }

func causal(Shape, *rand.Rand) *Options { return &Options{Causal: true} }

func customScale(Shape, *rand.Rand) *Options { return &Options{Scale: 0.37} }

// keyBias is BERT's additive mask: 0 for kept keys, float32's lowest value
// for padding at the end of each sequence.
func keyBias(s Shape, rng *rand.Rand) *Options {
	bias := make([]float32, s.Batch*s.SeqK)
	for b := 0; b < s.Batch; b++ {
		keep := 1 + rng.IntN(s.SeqK)
		for j := keep; j < s.SeqK; j++ {
			bias[b*s.SeqK+j] = -math.MaxFloat32
		}
	}
	return &Options{KeyBias: bias}
}

// keyMaskBiasCausal mixes a random boolean mask, a random additive bias and
// causality; batch 0 (when Batch > 1) has every key masked out.
func keyMaskBiasCausal(s Shape, rng *rand.Rand) *Options {
	o := &Options{Causal: true, KeyBias: make([]float32, s.Batch*s.SeqK), KeyMask: make([]bool, s.Batch*s.SeqK)}
	for i := range o.KeyMask {
		o.KeyMask[i] = rng.Float64() < 0.7
		o.KeyBias[i] = float32(rng.NormFloat64())
	}
	if s.Batch > 1 {
		for j := 0; j < s.SeqK; j++ {
			o.KeyMask[j] = false
		}
	}
	return o
}

func testCases() []testCase {
	shapes := []Shape{
		NewShape(1, 1, 1, 1, 1),
		NewShape(2, 3, 17, 33, 5),
		NewShape(2, 2, 64, 64, 64),
		NewShape(1, 2, 100, 130, 64), // seq not a multiple of the tile (64) nor of 16
		NewShape(2, 1, 7, 200, 63),   // odd head_dim
		NewShape(1, 1, 129, 65, 80),
		NewShape(3, 2, 5, 1, 16),
		NewShape(1, 3, 40, 70, 33),
	}
	opts := []struct {
		name string
		fn   func(Shape, *rand.Rand) *Options
	}{{"plain", noOpts}, {"causal", causal}, {"scale", customScale}, {"keybias", keyBias}, {"mask+bias+causal", keyMaskBiasCausal}}
	var cases []testCase
	for _, s := range shapes {
		for _, o := range opts {
			cases = append(cases, testCase{
				name:  fmt.Sprintf("%dx%dx%dx%dx%d/%s", s.Batch, s.Heads, s.SeqQ, s.SeqK, s.HeadDim, o.name),
				shape: s, opts: o.fn,
			})
		}
	}
	return cases
}

// randomInputs returns q, k, v drawn from N(0, 1) and rounded to float32.
func randomInputs(s Shape, rng *rand.Rand) (q, k, v []float32) {
	gen := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	return gen(s.QSize()), gen(s.KVSize()), gen(s.KVSize())
}

func to64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func toHalf(x []float32) []float16.Float16 {
	y := make([]float16.Float16, len(x))
	for i, v := range x {
		y[i] = halfFromF32(v)
	}
	return y
}

func fromHalf(x []float16.Float16) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = halfToF32(v)
	}
	return y
}

// compare checks got against want within abs + rel·|want| and returns the
// largest absolute error.
func compare(t *testing.T, what string, got []float32, want []float64, abs, rel float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	worst, bad := 0.0, 0
	for i, g := range got {
		e := math.Abs(float64(g) - want[i])
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		worst = max(worst, e)
		if e > abs+rel*math.Abs(want[i]) {
			if bad < 5 {
				t.Errorf("%s: out[%d] = %v, want %v (error %.3g)", what, i, g, want[i], e)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d outputs out of tolerance", what, bad, len(got))
	}
	return worst
}

func runAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst32, worst16 := 0.0, 0.0
	for _, tc := range testCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.shape
			o := tc.opts(s, rng)
			q, k, v := randomInputs(s, rng)
			want, err := Reference(to64(q), to64(k), to64(v), s, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, impl := range []struct {
				name string
				fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
			}{{"Naive", Naive}, {"Fused", Fused}, {"FusedInto", fusedIntoStale}} {
				got, err := impl.fn(q, k, v, s, o)
				if err != nil {
					t.Fatal(err)
				}
				worst32 = max(worst32, compare(t, impl.name, got, want, tol32Abs, tol32Rel))
			}

			qh, kh, vh := toHalf(q), toHalf(k), toHalf(v)
			want16, err := Reference(to64(fromHalf(qh)), to64(fromHalf(kh)), to64(fromHalf(vh)), s, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, impl := range []struct {
				name string
				fn   func(q, k, v []float16.Float16, s Shape, o *Options) ([]float16.Float16, error)
			}{{"NaiveFloat16", NaiveFloat16}, {"FusedFloat16", FusedFloat16}} {
				got, err := impl.fn(qh, kh, vh, s, o)
				if err != nil {
					t.Fatal(err)
				}
				worst16 = max(worst16, compare(t, impl.name, fromHalf(got), want16, tol32Abs, tol32Rel+tol16Rel))
			}
		})
	}
	t.Logf("kernels %s: largest error float32 %.3g, float16 %.3g", SIMDLevel(), worst32, worst16)
}

// TestAgainstReference checks Naive, Fused and their float16 variants
// against the float64 Reference with the kernels this machine runs.
func TestAgainstReference(t *testing.T) { runAgainstReference(t) }

// TestAgainstReferenceOtherKernels repeats TestAgainstReference with the
// other kernel versions this machine can run: the portable Go kernels
// (used without GOEXPERIMENT=simd or AVX2) and, on an AVX-512 machine, the
// AVX2+FMA ones.
func TestAgainstReferenceOtherKernels(t *testing.T) {
	for name, use := range kernelSets {
		t.Run(name, func(t *testing.T) {
			defer use()()
			runAgainstReference(t)
		})
	}
}

// TestFullyMaskedRowsAreZero: a batch whose keys are all masked out (by
// KeyMask, or by a -Inf KeyBias) gives zeros in every implementation.
func TestFullyMaskedRowsAreZero(t *testing.T) {
	s := NewShape(2, 2, 9, 20, 8)
	rng := rand.New(rand.NewPCG(3, 4))
	q, k, v := randomInputs(s, rng)
	byMask := &Options{KeyMask: make([]bool, s.Batch*s.SeqK)}
	byBias := &Options{KeyBias: make([]float32, s.Batch*s.SeqK)}
	for j := 0; j < s.SeqK; j++ {
		byMask.KeyMask[s.SeqK+j] = true // batch 1 attends everything, batch 0 nothing
		byBias.KeyBias[j] = float32(math.Inf(-1))
	}
	for _, o := range []*Options{byMask, byBias} {
		want, err := Reference(to64(q), to64(k), to64(v), s, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
		}{{"Naive", Naive}, {"Fused", Fused}} {
			got, err := impl.fn(q, k, v, s, o)
			if err != nil {
				t.Fatal(err)
			}
			half := s.QSize() / 2
			for i, x := range got[:half] {
				if x != 0 || want[i] != 0 {
					t.Fatalf("%s: out[%d] = %v (reference %v) for a fully masked batch, want 0", impl.name, i, x, want[i])
				}
			}
			compare(t, impl.name, got, want, tol32Abs, tol32Rel)
		}
	}
}

// TestLabOnes is spec §9 item 34: q = k = v = ones(32, 8, 128, 64) gives
// all 1.0 with the shape preserved, for float32 and float16, naive and
// fused; the naive scale is 1/√64 = 0.125.
func TestLabOnes(t *testing.T) {
	s := NewShape(32, 8, 128, 128, 64)
	ones := make([]float32, s.QSize())
	for i := range ones {
		ones[i] = 1
	}
	r, err := check("test", s, len(ones), len(ones), len(ones), nil)
	if err != nil || r.scale != 0.125 {
		t.Fatalf("default scale for head_dim 64 = %v (%v), want 0.125", r.scale, err)
	}
	for _, impl := range []struct {
		name string
		fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
	}{{"Naive", Naive}, {"Fused", Fused}} {
		got, err := impl.fn(ones, ones, ones, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkAllOne(t, impl.name, got, s)
	}
	onesH := toHalf(ones)
	for _, impl := range []struct {
		name string
		fn   func(q, k, v []float16.Float16, s Shape, o *Options) ([]float16.Float16, error)
	}{{"NaiveFloat16", NaiveFloat16}, {"FusedFloat16", FusedFloat16}} {
		got, err := impl.fn(onesH, onesH, onesH, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkAllOne(t, impl.name, fromHalf(got), s)
	}
}

func checkAllOne(t *testing.T, name string, got []float32, s Shape) {
	t.Helper()
	if len(got) != 32*8*128*64 {
		t.Fatalf("%s: %d outputs, want 32·8·128·64", name, len(got))
	}
	for i, x := range got {
		if x != 1 {
			t.Fatalf("%s: out[%d] = %v, want exactly 1.0", name, i, x)
		}
	}
}

// TestErrors: bad shapes and masks give errors naming the shapes.
func TestErrors(t *testing.T) {
	s := NewShape(2, 3, 4, 5, 6)
	q, k, v := make([]float32, s.QSize()), make([]float32, s.KVSize()), make([]float32, s.KVSize())
	cases := []struct {
		name    string
		s       Shape
		q, k, v []float32
		o       *Options
		want    string
	}{
		{"zero dim", NewShape(2, 0, 4, 5, 6), q, k, v, nil, "every dimension must be ≥ 1"},
		{"q length", s, q[1:], k, v, nil, "q has 143 elements, shape q [2 3 4 6], k/v [2 3 5 6] needs 2·3·4·6 = 144"},
		{"k length", s, q, k[:10], v, nil, "k has 10 elements"},
		{"v length", s, q, k, append(v, 0), nil, "v has 181 elements"},
		{"q and k swapped", s, k, q, v, nil, "q has 180 elements"},
		{"key bias", s, q, k, v, &Options{KeyBias: make([]float32, 5)}, "KeyBias has 5 elements; a key-padding mask is [batch, seq_k] = [2 5]"},
		{"key mask", s, q, k, v, &Options{KeyMask: make([]bool, 2*4)}, "KeyMask has 8 elements"},
		{"nan scale", s, q, k, v, &Options{Scale: math.NaN()}, "scale NaN must be finite"},
	}
	for _, tc := range cases {
		for _, impl := range []struct {
			name string
			fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
		}{{"Naive", Naive}, {"Fused", Fused}} {
			_, err := impl.fn(tc.q, tc.k, tc.v, tc.s, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sdpa."+impl.name) {
				t.Errorf("%s %s: error %v, want one containing %q", tc.name, impl.name, err, tc.want)
			}
		}
		_, err := Reference(to64(tc.q), to64(tc.k), to64(tc.v), tc.s, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s Reference: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if err := FusedInto(make([]float32, s.QSize()-1), q, k, v, s, nil); err == nil || !strings.Contains(err.Error(), "sdpa.FusedInto: out has 143 elements") {
		t.Errorf("FusedInto, short output: error %v", err)
	}
	_, err := FusedFloat16(make([]float16.Float16, 3), nil, nil, s, nil)
	if err == nil || !strings.Contains(err.Error(), "sdpa.FusedFloat16: q has 3 elements") {
		t.Errorf("FusedFloat16: error %v", err)
	}
}

// TestHalfConversions checks the float16 conversions exhaustively, for
// every kernel set: decoding against GoMLX's float16 package, and encoding
// as round to nearest, ties to even, subnormals included.
func TestHalfConversions(t *testing.T) {
	sets := map[string]func() func(){"default": func() func() { return func() {} }}
	for name, use := range kernelSets {
		sets[name] = use
	}
	for name, use := range sets {
		t.Run(name, func(t *testing.T) {
			defer use()()
			checkHalfConversions(t)
		})
	}
}

func checkHalfConversions(t *testing.T) {
	all := make([]float16.Float16, 1<<16)
	for h := range all {
		all[h] = float16.Float16(h)
	}
	dec := make([]float32, len(all))
	halfToFloat32(dec, all)
	// Encode every value back, and the midpoints between neighbours (which
	// round to the even one) and the floats just off the midpoints (which
	// round to the nearer one).
	var src []float32
	var want []float16.Float16
	for h, x := range all {
		got, ref := dec[h], x.Float32()
		if math.Float32bits(got) != math.Float32bits(ref) && !(got != got && ref != ref) {
			t.Fatalf("halfToFloat32(%#04x) = %v, want %v", h, got, ref)
		}
		if got != got {
			continue
		}
		src, want = append(src, got), append(want, x)
		if h&0x7fff >= 0x7c00 || (h+1)&0x7fff >= 0x7c00 || h == 0x7fff {
			continue
		}
		next := float16.Float16(h + 1)
		lo, hi := float64(got), float64(halfToF32(next))
		mid := float32((lo + hi) / 2)
		even := x
		if h&1 == 1 {
			even = next
		}
		toward := float32(math.Copysign(math.Inf(1), hi))
		src = append(src, mid, math.Nextafter32(mid, toward), math.Nextafter32(mid, -toward))
		want = append(want, even, next, x)
	}
	for _, c := range []struct {
		x    float32
		want float16.Float16
	}{{65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e9, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{0x1p-25, 0}, {0x1.000002p-25, 1}, {-0x1p-26, 0x8000}, {0x1p-24, 1}, {0x1.ff8p-15, 0x3ff}, {0x1.ffcp-15, 0x400},
		{0x1.ffbfep-15, 0x3ff}, {1e-10, 0}, {0, 0}} {
		src, want = append(src, c.x), append(want, c.want)
	}
	enc := make([]float16.Float16, len(src))
	float32ToHalf(enc, src)
	for i, x := range src {
		if enc[i] != want[i] {
			t.Fatalf("float32ToHalf(%v) = %#04x, want %#04x", x, uint16(enc[i]), uint16(want[i]))
		}
	}
	nan := make([]float16.Float16, 9)
	float32ToHalf(nan, []float32{float32(math.NaN()), 1, 1, 1, 1, 1, 1, 1, float32(math.NaN())})
	for _, i := range []int{0, 8} {
		if nan[i]&0x7c00 != 0x7c00 || nan[i]&0x3ff == 0 {
			t.Fatalf("float32ToHalf(NaN) = %#04x, not a NaN", uint16(nan[i]))
		}
	}
}

// FuzzFused compares Naive and Fused with Reference on shapes and options
// drawn from the fuzzer's input (dimensions up to 5·7·70·70·70).
func FuzzFused(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(1), uint8(0), uint64(1))
	f.Add(uint8(2), uint8(3), uint8(67), uint8(65), uint8(17), uint8(7), uint64(2))
	f.Add(uint8(1), uint8(1), uint8(5), uint8(69), uint8(64), uint8(5), uint64(3))
	f.Fuzz(func(t *testing.T, b, h, sq, sk, d, flags uint8, seed uint64) {
		s := NewShape(1+int(b)%5, 1+int(h)%7, 1+int(sq)%70, 1+int(sk)%70, 1+int(d)%70)
		rng := rand.New(rand.NewPCG(seed, 11))
		o := &Options{Causal: flags&1 != 0}
		if flags&2 != 0 {
			o = keyMaskBiasCausal(s, rng)
			o.Causal = flags&1 != 0
		}
		if flags&4 != 0 {
			o.Scale = rng.Float64() * 2
		}
		q, k, v := randomInputs(s, rng)
		want, err := Reference(to64(q), to64(k), to64(v), s, o)
		if err != nil {
			t.Fatal(err)
		}
		// Score errors grow with the scores, ~scale·√head_dim for N(0, 1)
		// inputs (1 at the default scale), and reach the output through
		// the softmax: widen the tolerance for large scales.
		widen := max(1, o.Scale*math.Sqrt(float64(s.HeadDim)))
		for _, impl := range []struct {
			name string
			fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
		}{{"Naive", Naive}, {"Fused", Fused}} {
			got, err := impl.fn(q, k, v, s, o)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, impl.name+" "+s.String(), got, want, tol32Abs*widen, tol32Rel*widen)
		}
	})
}

// TestTransposeEveryKernelSet checks transpose against the definition on
// shapes with and without whole 16×16 blocks, in every kernel set, and
// that it leaves kt's padding columns alone.
func TestTransposeEveryKernelSet(t *testing.T) {
	sets := map[string]func() func(){"in use (" + SIMDLevel() + ")": func() func() { return func() {} }}
	for name, use := range kernelSets {
		sets[name] = use
	}
	for name, use := range sets {
		restore := use()
		for _, sh := range [][3]int{{1, 1, 1}, {16, 16, 16}, {128, 64, 64}, {37, 100, 100}, {48, 17, 17}, {15, 32, 32}, {40, 64, 128}, {33, 20, 60}} {
			n, D, ldx := sh[0], sh[1], sh[2]
			ldk := roundUp(n, 16) + 16
			x := make([]float32, n*ldx)
			for i := range x {
				x[i] = float32(i) + 0.5
			}
			kt := make([]float32, D*ldk)
			for i := range kt {
				kt[i] = -1
			}
			transpose(kt, ldk, x, ldx, n, D)
			for d := 0; d < D; d++ {
				for j := 0; j < ldk; j++ {
					want := float32(-1)
					if j < n {
						want = x[j*ldx+d]
					}
					if got := kt[d*ldk+j]; got != want {
						t.Fatalf("%s, n=%d D=%d: kt[%d][%d] = %v, want %v", name, n, D, d, j, got, want)
					}
				}
			}
		}
		restore()
	}
}

// fusedIntoStale is FusedInto on an output holding stale values (NaN),
// which it must overwrite everywhere.
func fusedIntoStale(q, k, v []float32, s Shape, o *Options) ([]float32, error) {
	out := make([]float32, s.QSize())
	for i := range out {
		out[i] = float32(math.NaN())
	}
	return out, FusedInto(out, q, k, v, s, o)
}

// TestSeqMajorLayout: every implementation given q, k and v laid out
// [batch, seq, heads, head_dim] (SeqMajor) returns, in that layout, what
// it returns for the same values laid out [batch, heads, seq, head_dim]:
// the same numbers to the bit, with masks, causal rows, several query
// chunks per head and a head_dim that is not a multiple of 16.
func TestSeqMajorLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, s := range []Shape{NewShape(2, 3, 5, 7, 8), NewShape(1, 2, 130, 70, 100), NewShape(3, 1, 16, 16, 64)} {
		q, k, v := randomInputs(s, rng)
		bias := make([]float32, s.Batch*s.SeqK)
		bias[len(bias)-1] = -1e4
		for _, o := range []Options{{}, {Causal: true}, {KeyBias: bias, Scale: 0.3}} {
			seq := o
			seq.SeqMajor = true
			B, H, D := s.Batch, s.Heads, s.HeadDim
			qs, ks, vs := swapAxes12(q, B, H, s.SeqQ, D), swapAxes12(k, B, H, s.SeqK, D), swapAxes12(v, B, H, s.SeqK, D)
			for _, impl := range []struct {
				name string
				fn   func(q, k, v []float32, s Shape, o *Options) ([]float32, error)
			}{{"Naive", Naive}, {"Fused", Fused}, {"FusedInto", fusedIntoStale}, {"FusedFloat16", widenHalf(FusedFloat16)}, {"NaiveFloat16", widenHalf(NaiveFloat16)}} {
				want, err := impl.fn(q, k, v, s, &o)
				if err != nil {
					t.Fatal(err)
				}
				got, err := impl.fn(qs, ks, vs, s, &seq)
				if err != nil {
					t.Fatal(err)
				}
				got = swapAxes12(got, B, s.SeqQ, H, D)
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %s %+v: element %d is %v seq-major, %v head-major", impl.name, s, o, i, got[i], want[i])
					}
				}
			}
			want, _ := Reference(to64(q), to64(k), to64(v), s, &o)
			got, err := Reference(to64(qs), to64(ks), to64(vs), s, &seq)
			if err != nil {
				t.Fatal(err)
			}
			got = swapAxes12(got, B, s.SeqQ, H, D)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("Reference %s %+v: element %d is %v seq-major, %v head-major", s, o, i, got[i], want[i])
				}
			}
		}
	}
}

// widenHalf runs a float16 implementation on float32 values (rounded to
// float16 on the way in, widened on the way out).
func widenHalf(fn func(q, k, v []float16.Float16, s Shape, o *Options) ([]float16.Float16, error)) func(q, k, v []float32, s Shape, o *Options) ([]float32, error) {
	return func(q, k, v []float32, s Shape, o *Options) ([]float32, error) {
		out, err := fn(toHalf(q), toHalf(k), toHalf(v), s, o)
		if err != nil {
			return nil, err
		}
		return fromHalf(out), nil
	}
}
