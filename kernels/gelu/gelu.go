// Package gelu is the exact GELU activation, x·Φ(x) = ½·x·(1 + erf(x/√2)),
// as a float32 SIMD kernel for the host.
//
// The Go backend's fused GELU evaluates erf in float64 through math.Erf,
// one element at a time, and that is a quarter of bert-tiny's forward pass
// on the CPU. This kernel computes Φ from erfc, which keeps its relative
// accuracy in the negative tail:
//
//	Φ(x) = ½·erfc(|x|/√2)        for x < 0
//	Φ(x) = 1 − ½·erfc(|x|/√2)    for x ≥ 0
//
// with erfc(z) = t·exp(−z² + P(t)), t = 2/(2 + z) and P the degree-9
// Chebyshev-fitted polynomial of Numerical Recipes' erfcc (fractional error
// below 1.2·10⁻⁷ for every z ≥ 0), the exponential by the same vector exp
// as kernels/sdpa. Compiled mode runs it as a graph break (the gelu_kernel
// rewrite of mase/compileopt).
package gelu

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/internal/hostout"
)

// Coefficients of erfcc: erfc(z) ≈ t·exp(−z² + c0 + t·(c1 + t·(c2 + …))).
const (
	c0 = -1.26551223
	c1 = 1.00002368
	c2 = 0.37409196
	c3 = 0.09678418
	c4 = -0.18628806
	c5 = 0.27886807
	c6 = -1.13520398
	c7 = 1.48851587
	c8 = -0.82215223
	c9 = 0.17087277

	invSqrt2 = 0.70710678118654752440
	// invSqrt2Hi is 1/√2 rounded to float32, invSqrt2Lo the rest.
	invSqrt2Hi = float32(invSqrt2)
	invSqrt2Lo = float32(invSqrt2 - float64(invSqrt2Hi))
)

// Reference is GELU in float64 through math.Erfc (the test oracle).
func Reference(x float64) float64 { return 0.5 * x * math.Erfc(-x*invSqrt2) }

// scalar is the kernel's formula for one element in float64, used for the
// tail of a slice and where no SIMD kernel exists.
func scalar(x float32) float32 {
	z := math.Abs(float64(x)) * invSqrt2
	t := 2 / (2 + z)
	p := float64(c9)
	for _, c := range [...]float64{c8, c7, c6, c5, c4, c3, c2, c1, c0} {
		p = p*t + c
	}
	half := 0.5 * t * math.Exp(p-z*z)
	if x < 0 {
		return float32(float64(x) * half)
	}
	return float32(float64(x) * (1 - half))
}

// kernel is the fastest implementation of GELU on a slice on this CPU
// (dst and src have the same length; they may be the same slice).
var kernel = func(dst, src []float32) {
	for i, x := range src {
		dst[i] = scalar(x)
	}
}

// Level names the SIMD kernel in use: "avx512", "avx2+fma" or "go".
var Level = "go"

// parallelChunk is the smallest slice split across goroutines.
const parallelChunk = 1 << 15

// Apply writes GELU(src) into dst, splitting large slices across
// GOMAXPROCS goroutines. dst and src must have the same length and may be
// the same slice.
func Apply(dst, src []float32) error {
	if len(dst) != len(src) {
		return fmt.Errorf("gelu.Apply: dst has %d elements, src %d", len(dst), len(src))
	}
	workers := min(runtime.GOMAXPROCS(0), len(src)/parallelChunk)
	if workers <= 1 {
		kernel(dst, src)
		return nil
	}
	// Chunks are multiples of 16 elements so that every one but the last
	// runs whole vectors.
	chunk := (len(src)/workers + 15) &^ 15
	var wg sync.WaitGroup
	for start := 0; start < len(src); start += chunk {
		end := min(start+chunk, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			kernel(dst[start:end], src[start:end])
		}()
	}
	wg.Wait()
	return nil
}

// Tensor returns GELU(x) for a Float32 tensor of any shape as a new tensor.
func Tensor(x *tensors.Tensor) (*tensors.Tensor, error) {
	if x == nil {
		return nil, fmt.Errorf("gelu.Tensor: nil tensor")
	}
	if x.DType() != dtypes.Float32 {
		return nil, fmt.Errorf("gelu.Tensor: %s tensor; the kernel takes Float32 (other dtypes use the backend's GELU)", x.Shape())
	}
	out := hostout.Like(x, x.Shape())
	var inner error
	err := tensors.MutableFlatData(out, func(o []float32) {
		inner = tensors.ConstFlatData(x, func(in []float32) {
			inner = Apply(o, in)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("gelu.Tensor: %w", err)
	}
	return out, inner
}
