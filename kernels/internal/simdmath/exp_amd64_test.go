//go:build amd64 && goexperiment.simd

package simdmath

import (
	"math"
	"simd/archsimd"
	"testing"
)

// TestExp checks both widths against math.Exp: within 3 float32 ulps over
// the normal range, 0 below it and for -Inf.
func TestExp(t *testing.T) {
	var xs []float32
	for x := -100.0; x <= 88; x += 0.0137 {
		xs = append(xs, float32(x))
	}
	xs = append(xs, float32(math.Inf(-1)), 0, -0.5, 1e-8)
	for len(xs)%16 != 0 {
		xs = append(xs, 1)
	}
	check := func(name string, x, got float32) {
		want := math.Exp(float64(x))
		if want < 1.2e-38 {
			if got != 0 && float64(got) > 2*want+1e-44 {
				t.Fatalf("%s(%g) = %g, want about %g", name, x, got, want)
			}
			return
		}
		if rel := math.Abs(float64(got)-want) / want; rel > 3*math.Pow(2, -24) {
			t.Fatalf("%s(%g) = %g, want %g (relative error %.2g)", name, x, got, want, rel)
		}
	}
	if archsimd.X86.AVX512() {
		for i := 0; i < len(xs); i += 16 {
			var out [16]float32
			Exp16(archsimd.LoadFloat32x16Slice(xs[i:])).Store(&out)
			for j, v := range out {
				check("Exp16", xs[i+j], v)
			}
		}
	}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		for i := 0; i < len(xs); i += 8 {
			var out [8]float32
			Exp8(archsimd.LoadFloat32x8Slice(xs[i:])).Store(&out)
			for j, v := range out {
				check("Exp8", xs[i+j], v)
			}
		}
	}
}
