package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
)

// graphCase is a spec with the input shape the graph test uses.
type graphCase struct {
	spec  Spec
	shape []int
	// stat marks formats whose output depends on sums/means computed in the
	// graph's dtype: they match the reference within rounding, not exactly.
	stat bool
	// f64Only marks formats whose values do not fit float32.
	f64Only bool
}

func graphCases() []graphCase {
	b := func(v int) *int { return &v }
	return []graphCase{
		{spec: Spec{Format: Integer, Width: 8, FracWidth: 4}, shape: []int{3, 40}},
		{spec: Spec{Format: Fixed, Width: 8, FracWidth: 4, Floor: true}, shape: []int{3, 40}},
		{spec: Spec{Format: Integer, Width: 4, FracWidth: 2}, shape: []int{120}},
		{spec: Spec{Format: Integer, Width: 16, FracWidth: 8}, shape: []int{3, 40}},
		{spec: Spec{Format: Integer, Width: 1, FracWidth: 0}, shape: []int{3, 40}},
		{spec: Spec{Format: Integer, Width: 24, FracWidth: 12}, shape: []int{3, 40}},
		{spec: Spec{Format: Integer, Width: 32, FracWidth: 16}, shape: []int{3, 40}, f64Only: true},
		{spec: Spec{Format: MinifloatIEEE, Width: 8, ExponentWidth: 4}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatIEEE, Width: 8, ExponentWidth: 4, ExponentBias: b(3)}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatIEEE, Width: 6, ExponentWidth: 2}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatIEEE, Width: 16, ExponentWidth: 5}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatIEEE, Width: 4, ExponentWidth: 3}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatIEEE, Width: 32, ExponentWidth: 10}, shape: []int{3, 40}, f64Only: true},
		{spec: Spec{Format: MinifloatDenorm, Width: 8, ExponentWidth: 4}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatDenorm, Width: 8, ExponentWidth: 4, ExponentBias: b(-2)}, shape: []int{3, 40}},
		{spec: Spec{Format: MinifloatDenorm, Width: 12, ExponentWidth: 6}, shape: []int{3, 40}},
		{spec: Spec{Format: Log, Width: 8}, shape: []int{3, 40}},
		{spec: Spec{Format: Log, Width: 4}, shape: []int{3, 40}},
		{spec: Spec{Format: Log, Width: 6, ExponentBias: b(2)}, shape: []int{3, 40}},
		{spec: Spec{Format: Log, Width: 11}, shape: []int{3, 40}, f64Only: true},
		{spec: Spec{Format: BlockFP, Width: 8, ExponentWidth: 8, BlockSize: []int{4}}, shape: []int{120}},
		{spec: Spec{Format: BlockFP, Width: 4, ExponentWidth: 8, BlockSize: []int{1, 16}}, shape: []int{3, 40}},
		{spec: Spec{Format: BlockFP, Width: 6, ExponentWidth: 8, BlockSize: []int{16}}, shape: []int{3, 40}},
		{spec: Spec{Format: BlockFP, Width: 12, ExponentWidth: 5, BlockSize: []int{16}, SkipFirstDim: true}, shape: []int{2, 5, 12}},
		{spec: Spec{Format: BlockFP, Width: 8, ExponentWidth: 8, BlockSize: []int{1, 16}, SkipFirstDim: true}, shape: []int{2, 5, 12}},
		{spec: Spec{Format: BlockFP, Width: 8, ExponentWidth: 3, BlockSize: []int{-1}}, shape: []int{3, 40}},
		{spec: Spec{Format: BlockMinifloat, Width: 8, ExponentWidth: 4, ExponentBiasWidth: 8, BlockSize: []int{4}}, shape: []int{120}},
		{spec: Spec{Format: BlockMinifloat, Width: 6, ExponentWidth: 3, ExponentBiasWidth: 4, BlockSize: []int{1, 8}}, shape: []int{3, 40}},
		{spec: Spec{Format: BlockMinifloat, Width: 8, ExponentWidth: 4, ExponentBiasWidth: 2, BlockSize: []int{16}, SkipFirstDim: true}, shape: []int{2, 5, 12}},
		{spec: Spec{Format: BlockLog, Width: 8, ExponentBiasWidth: 8, BlockSize: []int{4}}, shape: []int{120}},
		{spec: Spec{Format: BlockLog, Width: 5, ExponentBiasWidth: 4, BlockSize: []int{16}, SkipFirstDim: true}, shape: []int{3, 40}},
		{spec: Spec{Format: BlockLog, Width: 4, ExponentBiasWidth: 3, BlockSize: []int{1, 8}}, shape: []int{3, 40}},
		{spec: Spec{Format: Binary, Bipolar: true}, shape: []int{3, 40}},
		{spec: Spec{Format: Binary}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: Binary}, shape: []int{120}, stat: true},
		{spec: Spec{Format: Binary, Stochastic: true}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: BinaryResidual}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: BinaryResidual, Levels: 3}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: BinaryResidual, Levels: 1}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: BinaryResidual, Means: []float64{0.9, -0.05}}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: Ternary}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: Ternary, ScalingFactor: true}, shape: []int{3, 40}, stat: true},
		{spec: Spec{Format: Ternary, ScalingFactor: true}, shape: []int{2, 3, 20}, stat: true},
		{spec: Spec{Format: MXInt8, GroupSize: 8}, shape: []int{3, 40}},
		{spec: Spec{Format: MXInt8, GroupSize: 32}, shape: []int{4, 64}},
		{spec: Spec{Format: MXInt8, GroupSize: 64, Width: 8}, shape: []int{256}},
	}
}

// testInputs draws n float32-representable values mixing the cases that
// matter to quantisers: ordinary magnitudes, zeros, exact powers of two,
// rounding ties, tiny values around torch.isclose's 1e-8 and large ones.
func testInputs(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		s := 1.0
		if rng.IntN(2) == 0 {
			s = -1
		}
		var v float64
		switch r := rng.IntN(20); {
		case r < 11:
			v = math.Exp2(rng.Float64()*16 - 10)
		case r < 13:
			v = 0
		case r < 15:
			v = math.Ldexp(1, rng.IntN(17)-10)
		case r < 17:
			v = math.Ldexp(float64(rng.IntN(64))+0.5, rng.IntN(10)-12)
		case r < 18:
			v = rng.Float64() * 2e-8
		case r < 19:
			v = math.Exp2(rng.Float64()*20 + 6)
		default:
			v = rng.Float64()*4 - 2
		}
		x[i] = float64(float32(s * v))
	}
	return x
}

// runGraph executes the spec's graph on x (and u, fed to random) in dtype,
// returning the output and the gradient of Σ output with respect to x.
func runGraph(t *testing.T, spec Spec, x, u []float64, shape []int, dt dtypes.DType) (out, grad []float64) {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	var buildErr error
	exec, err := graph.NewExec(be, func(xn, un *graph.Node) (*graph.Node, *graph.Node) {
		random := func(dims ...int) *graph.Node { return graph.ConvertDType(un, dtypes.Float32) }
		q, err := spec.Graph(xn, random)
		if err != nil {
			buildErr = err
			return xn, xn
		}
		return q, graph.Gradient(graph.ReduceAllSum(q), xn)[0]
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(toTensor(x, shape, dt), toTensor(u, shape, dt))
	if buildErr != nil {
		t.Fatalf("%+v: %v", spec, buildErr)
	}
	if err != nil {
		t.Fatalf("%+v: %v", spec, err)
	}
	return fromTensor(res[0]), fromTensor(res[1])
}

func toTensor(v []float64, shape []int, dt dtypes.DType) *tensors.Tensor {
	if dt == dtypes.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return tensors.FromFlatDataAndDimensions(f, shape...)
	}
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), v...), shape...)
}

func fromTensor(t *tensors.Tensor) []float64 {
	if t.DType() == dtypes.Float32 {
		f := tensors.MustCopyFlatData[float32](t)
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	return tensors.MustCopyFlatData[float64](t)
}

// TestGraphMatchesReference checks every format's graph against the
// reference on random inputs, in float32 and float64, and that the
// gradient is the straight-through identity.
func TestGraphMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tc := range graphCases() {
		for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64} {
			if tc.f64Only && dt == dtypes.Float32 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v/%s", tc.spec.Format, tc.shape, dt), func(t *testing.T) {
				n := 1
				for _, d := range tc.shape {
					n *= d
				}
				for rep := range 3 {
					x := testInputs(rng, n)
					u := make([]float64, n)
					for i := range u {
						u[i] = float64(float32(rng.Float64()))
					}
					got, grad := runGraph(t, tc.spec, x, u, tc.shape, dt)
					var want []float64
					var err error
					if tc.spec.Format == Binary && tc.spec.Stochastic {
						want = QuantizeBinaryStochastic(x, u, tc.shape, tc.spec.Bipolar)
					} else {
						want, err = tc.spec.Reference(x, tc.shape)
						if err != nil {
							t.Fatal(err)
						}
					}
					bad := 0
					for i := range want {
						w := want[i]
						if dt == dtypes.Float32 {
							w = float64(float32(w))
						}
						ok := got[i] == w
						if tc.stat {
							tol := 1e-13
							if dt == dtypes.Float32 {
								tol = 1e-6
							}
							ok = math.Abs(got[i]-w) <= tol*math.Max(1, math.Abs(w))
						}
						if !ok && bad < 5 {
							t.Errorf("rep %d: x[%d] = %v (%#x as float32): graph %v, reference %v", rep, i, x[i], math.Float32bits(float32(x[i])), got[i], want[i])
							bad++
						}
						if grad[i] != 1 {
							t.Fatalf("gradient[%d] = %v, want 1 (straight-through)", i, grad[i])
						}
					}
				}
			})
		}
	}
}

// TestGraphErrors checks the graph builder's argument errors.
func TestGraphErrors(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec  Spec
		shape []int
		want  string
	}{
		{Spec{Format: Binary, Stochastic: true, Bipolar: true}, []int{4}, "needs a random source"},
		{Spec{Format: MXInt8, GroupSize: 32}, []int{40}, "40 elements are not a multiple of group_size 32"},
		{Spec{Format: Integer, Width: 40}, []int{4}, "width 40 is out of range for integer (allowed: 1..32)"},
	} {
		var got error
		exec, err := graph.NewExec(be, func(x *graph.Node) *graph.Node {
			q, err := tc.spec.Graph(x, nil)
			got = err
			if err != nil {
				return x
			}
			return q
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := exec.Exec(tensors.FromFlatDataAndDimensions(make([]float32, numelOf(tc.shape)), tc.shape...)); err != nil {
			t.Fatal(err)
		}
		if !contains(got, tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.spec, got, tc.want)
		}
	}
}

func numelOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestGraphFloat64Extremes compares float64 graphs with the reference on
// values far outside float32: huge, tiny, subnormal.
func TestGraphFloat64Extremes(t *testing.T) {
	x := []float64{1e300, -1e-300, 5e-324, 1.7e308, -3.3e-310, 0.1, -2.5e-20, 7e15, math.Ldexp(1, -1022), -math.Ldexp(1, 1000),
		1e-8, -1.0000000000000002e-8, 0, 3, -0.75, 1e-100}
	for _, tc := range graphCases() {
		if tc.stat {
			continue // sums of such magnitudes overflow
		}
		shape := []int{len(x)}
		if tc.spec.Format == MXInt8 {
			if tc.spec.GroupSize > len(x) {
				continue
			}
			shape = []int{len(x)}
		}
		got, grad := runGraph(t, tc.spec, x, make([]float64, len(x)), shape, dtypes.Float64)
		want, err := tc.spec.Reference(x, shape)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] || grad[i] != 1 {
				t.Errorf("%+v: x = %v: graph %v (grad %v), reference %v", tc.spec, x[i], got[i], grad[i], want[i])
			}
		}
	}
}
