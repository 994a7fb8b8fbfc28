package gelu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
)

// sweep returns values covering GELU's range: a dense grid on [-12, 12],
// the special values, and random normals of several scales.
func sweep() []float32 {
	var xs []float32
	for x := -12.0; x <= 12; x += 1.0 / 256 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 1e-6, -1e-6, 30, -30, 1e4, -1e4)
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []float64{0.01, 1, 3, 10} {
		for range 5000 {
			xs = append(xs, float32(r.NormFloat64()*s))
		}
	}
	return xs
}

// checkAccuracy compares got with the float64 reference: within
// 6·10⁻⁷ + 6·10⁻⁸·x² relative wherever |GELU(x)| ≥ 10⁻³⁶ (a few float32
// ulps, plus the rounding of the float32 argument of exp, −x²/2 + …, that
// grows with x²), and within 10⁻³⁶ absolute below, near the end
// of float32's normal numbers.
func checkAccuracy(t *testing.T, name string, xs, got []float32) {
	t.Helper()
	worst := 0.0
	for i, x := range xs {
		want := Reference(float64(x))
		g := float64(got[i])
		if math.IsNaN(g) {
			t.Fatalf("%s: GELU(%g) = NaN", name, x)
		}
		d := math.Abs(g - want)
		if math.Abs(want) >= 1e-36 {
			rel := d / math.Abs(want)
			worst = max(worst, rel)
			if rel > 6e-7+6e-8*float64(x)*float64(x) {
				t.Fatalf("%s: GELU(%g) = %g, want %g (relative error %.2g)", name, x, g, want, rel)
			}
		} else if d > 1e-36 {
			t.Fatalf("%s: GELU(%g) = %g, want %g", name, x, g, want)
		}
	}
	t.Logf("%s (%s): worst relative error %.3g over %d values", name, Level, worst, len(xs))
}

func TestApplyAccuracy(t *testing.T) {
	xs := sweep()
	got := make([]float32, len(xs))
	if err := Apply(got, xs); err != nil {
		t.Fatal(err)
	}
	checkAccuracy(t, "Apply", xs, got)
	sc := make([]float32, len(xs))
	for i, x := range xs {
		sc[i] = scalar(x)
	}
	checkAccuracy(t, "scalar", xs, sc)
}

func TestApplyInPlaceAndOddLengths(t *testing.T) {
	for _, n := range []int{0, 1, 7, 15, 16, 17, 33, parallelChunk*2 + 5} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(i%97)/10 - 4.8
		}
		want := make([]float32, n)
		for i, x := range src {
			want[i] = scalar(x)
		}
		if err := Apply(src, src); err != nil {
			t.Fatal(err)
		}
		for i := range src {
			if d := math.Abs(float64(src[i] - want[i])); d > 1e-6*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("n=%d [%d]: %g, want %g", n, i, src[i], want[i])
			}
		}
	}
	if err := Apply(make([]float32, 3), make([]float32, 4)); err == nil {
		t.Error("no error for different lengths")
	}
}

func TestTensor(t *testing.T) {
	x := tensors.FromFlatDataAndDimensions([]float32{-3, -1, 0, 0.5, 2, 7}, 2, 3)
	y, err := Tensor(x)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Shape().Equal(x.Shape()) {
		t.Fatalf("shape %s, want %s", y.Shape(), x.Shape())
	}
	checkAccuracy(t, "Tensor", tensors.MustCopyFlatData[float32](x), tensors.MustCopyFlatData[float32](y))
	if _, err := Tensor(tensors.FromFlatDataAndDimensions([]float64{1}, 1)); err == nil {
		t.Error("no error for a Float64 tensor")
	}
}

func BenchmarkApply(b *testing.B) {
	src := make([]float32, 8*128*512) // bert-tiny's intermediate activation
	for i := range src {
		src[i] = float32(i%1000)/100 - 5
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(8 * len(src)))
	for b.Loop() {
		if err := Apply(dst, src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReference(b *testing.B) {
	src := make([]float32, 8*128*512)
	for i := range src {
		src[i] = float32(i%1000)/100 - 5
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(8 * len(src)))
	for b.Loop() {
		for i, x := range src {
			dst[i] = float32(Reference(float64(x)))
		}
	}
}
