package gelu

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
)

// backendGELU returns an executable of the Go backend's fused exact GELU
// (what nn.GELUOp runs).
func backendGELU(tb testing.TB) *graph.Exec {
	be, err := backend.Default()
	if err != nil {
		tb.Fatal(err)
	}
	exec, err := graph.NewExec(be, func(x *graph.Node) *graph.Node { return graph.BackendFusedGelu(x, true) })
	if err != nil {
		tb.Fatal(err)
	}
	return exec
}

// TestAgreesWithBackendGELU checks the kernel against the Go backend's
// GELU, which it replaces in compiled graphs.
func TestAgreesWithBackendGELU(t *testing.T) {
	xs := sweep()
	out, err := backendGELU(t).Call(tensors.FromFlatDataAndDimensions(xs, len(xs)))
	if err != nil {
		t.Fatal(err)
	}
	want := tensors.MustCopyFlatData[float32](out[0])
	got := make([]float32, len(xs))
	if err := Apply(got, xs); err != nil {
		t.Fatal(err)
	}
	// The two agree to float32 rounding on the scale of x. In the negative
	// tail the backend forms 1 + erf(x/√2), which cancels: its relative
	// error grows with |x| (4% at x = −5) until it returns 0; the kernel
	// keeps the tail (checkAccuracy holds it to the float64 reference).
	worse := 0
	for i, x := range xs {
		ax := math.Abs(float64(x))
		if d := math.Abs(float64(got[i] - want[i])); d > 3e-7*max(1, ax) {
			t.Fatalf("GELU(%g): kernel %g, backend %g", x, got[i], want[i])
		}
		if ref := Reference(float64(x)); ref != 0 && math.Abs(float64(want[i])-ref) > 1e-3*math.Abs(ref) {
			worse++
		}
	}
	t.Logf("%d of %d values: the backend's relative error is above 0.1%% (the kernel's never is)", worse, len(xs))
}

// BenchmarkBackendGELU times the Go backend's fused GELU on the same
// tensor as BenchmarkApply.
func BenchmarkBackendGELU(b *testing.B) {
	src := make([]float32, 8*128*512)
	for i := range src {
		src[i] = float32(i%1000)/100 - 5
	}
	x := tensors.FromFlatDataAndDimensions(src, len(src))
	exec := backendGELU(b)
	b.SetBytes(int64(8 * len(src)))
	for b.Loop() {
		if _, err := exec.Call(x); err != nil {
			b.Fatal(err)
		}
	}
}
