//go:build cgo && linux && (amd64 || arm64) && !noxla

package backend_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/perf"
)

// openCUDA opens xla:cuda, or skips the test where there is none (every
// machine without an NVIDIA GPU and JAX's CUDA plugin).
func openCUDA(t *testing.T) compute.Backend {
	t.Helper()
	be, err := backend.Open("xla:cuda,notf32") // TF32 matmuls would round the reference graphs
	if err != nil {
		t.Skipf("no xla:cuda backend here: %v", err)
	}
	t.Cleanup(be.Finalize)
	if k := backend.Kernels(be); !k.MXInt8 || !k.SDPA {
		t.Fatalf("xla:cuda opened without gomase's kernels: %s", k)
	}
	return be
}

// TestCUDAKernelsMXInt8InGraph dequantises random MXINT8 tables (every
// exponent, ±0, all mantissas) through the kernel inside an XLA graph,
// as QEmbeddingPacked does, and compares bit for bit with the reference.
func TestCUDAKernelsMXInt8InGraph(t *testing.T) {
	be := openCUDA(t)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, gs := range []int{8, 32, 128, 512} {
		rows, d := 1000, 2*gs
		n := rows * d
		m := make([]int8, n)
		e := make([]uint8, n/gs)
		for g := range e {
			e[g] = uint8(g % (mxint8.MaxExponent + 1)) // every exponent, 0 with zero mantissas
			for i := g * gs; i < (g+1)*gs; i++ {
				if e[g] != 0 {
					m[i] = int8(rng.IntN(255) - 127)
				}
			}
		}
		p, err := mxint8.NewPacked(m, e, gs)
		if err != nil {
			t.Fatal(err)
		}
		want := mxint8.DequantizeReference(p)
		ids := make([]int32, rows)
		for i := range ids {
			ids[i] = int32(i)
		}
		out, err := graph.ExecOnce(be, func(mt, et, it *graph.Node) *graph.Node {
			q := &graph.Quantization{Scheme: backend.QuantMXInt8, Scale: et, BlockAxis: 1, BlockSize: gs}
			return graph.BackendQuantizedEmbeddingLookup(mt, graph.ExpandAxes(it, -1), q)
		}, tensors.FromFlatDataAndDimensions(m, rows, d), tensors.FromFlatDataAndDimensions(e, n/gs), tensors.FromFlatDataAndDimensions(ids, rows))
		if err != nil {
			t.Fatalf("group %d: %v", gs, err)
		}
		got, err := tensors.CopyFlatData[bfloat16.BFloat16](out)
		out.MustFinalizeAll()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("group %d, value %d (mantissa %d, exponent %d): %v from the kernel, %v from the reference",
					gs, i, m[i], e[i/gs], got[i], want[i])
			}
		}
	}
}

// TestCUDAKernelsAttentionInGraph runs sdpa.FusedGraph through the
// flash-attention kernel (float32, masked float16) inside an XLA graph
// and checks it against the float64 reference.
func TestCUDAKernelsAttentionInGraph(t *testing.T) {
	be := openCUDA(t)
	for _, tc := range []struct {
		dtype  dtypes.DType
		masked bool
		tol    float64
	}{{dtypes.Float32, false, 1e-5}, {dtypes.Float32, true, 1e-5}, {dtypes.Float16, true, 2e-3}} {
		r, err := perf.SDPAGraph(be, [4]int{4, 4, 128, 64}, tc.dtype, tc.masked, 2, 1)
		if err != nil {
			t.Fatalf("%s masked=%v: %v", tc.dtype, tc.masked, err)
		}
		if !r.Fused || !(r.FusedMaxAbsErr <= tc.tol) {
			t.Errorf("%s masked=%v: fused op %v, kernel's max |error| %.3g vs float64 (allowed %g; the naive graph's %.3g)", tc.dtype, tc.masked, r.Fused, r.FusedMaxAbsErr, tc.tol, r.NaiveMaxAbsErr)
		}
	}
}

// TestCUDAKernelsPackedModel runs packed bert-tiny on xla:cuda with the
// MXINT8 kernel and on a second backend without it: the logits agree.
func TestCUDAKernelsPackedModel(t *testing.T) {
	be := openCUDA(t)
	t.Setenv(backend.KernelsEnv, "off")
	off, err := backend.Open("xla:cuda,notf32")
	if err != nil {
		t.Fatal(err)
	}
	defer off.Finalize()
	if backend.Kernels(off).MXInt8 {
		t.Fatalf("%s=off: %s", backend.KernelsEnv, backend.Kernels(off))
	}
	got := forward(t, be, packedBertTiny(t))
	want := forward(t, off, packedBertTiny(t))
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-3 {
			t.Fatalf("logit %d: %g with the kernel, %g with the GoMLX graph", i, got[i], want[i])
		}
	}
}
