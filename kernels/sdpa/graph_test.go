package sdpa

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
)

func testBackend(t testing.TB) compute.Backend {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// graphMask is a mask for the graph tests with the Options it stands for.
type graphMask struct {
	name   string
	tensor func(s Shape, o *Options) *tensors.Tensor // nil: no mask
	opts   func(s Shape, rng *rand.Rand) *Options
}

func graphMasks() []graphMask {
	return []graphMask{
		{"none", nil, noOpts},
		{"bool [B,Sk]", func(s Shape, o *Options) *tensors.Tensor {
			return tensors.FromFlatDataAndDimensions(o.KeyMask, s.Batch, s.SeqK)
		}, func(s Shape, rng *rand.Rand) *Options {
			o := &Options{KeyMask: make([]bool, s.Batch*s.SeqK)}
			for i := range o.KeyMask {
				o.KeyMask[i] = rng.Float64() < 0.6
			}
			return o
		}},
		{"additive [B,1,1,Sk]", func(s Shape, o *Options) *tensors.Tensor {
			return tensors.FromFlatDataAndDimensions(o.KeyBias, s.Batch, 1, 1, s.SeqK)
		}, keyBias},
		{"causal [1,1,Sq,Sk]", func(s Shape, _ *Options) *tensors.Tensor {
			m := make([]bool, s.SeqQ*s.SeqK)
			for i := 0; i < s.SeqQ; i++ {
				for j := 0; j <= i && j < s.SeqK; j++ {
					m[i*s.SeqK+j] = true
				}
			}
			return tensors.FromFlatDataAndDimensions(m, 1, 1, s.SeqQ, s.SeqK)
		}, causal},
	}
}

func qkvTensors(q, k, v []float32, s Shape) []any {
	return []any{
		tensors.FromFlatDataAndDimensions(q, s.Batch, s.Heads, s.SeqQ, s.HeadDim),
		tensors.FromFlatDataAndDimensions(k, s.Batch, s.Heads, s.SeqK, s.HeadDim),
		tensors.FromFlatDataAndDimensions(v, s.Batch, s.Heads, s.SeqK, s.HeadDim),
	}
}

// TestGraphs checks NaiveGraph and FusedGraph (compiled on the test
// backend) and FusedTensors against Reference, with every kind of mask.
func TestGraphs(t *testing.T) {
	be := testBackend(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range []Shape{NewShape(2, 3, 17, 33, 8), NewShape(1, 2, 20, 20, 64)} {
		for _, gm := range graphMasks() {
			t.Run(s.String()+"/"+gm.name, func(t *testing.T) {
				o := gm.opts(s, rng)
				q, k, v := randomInputs(s, rng)
				want, err := Reference(to64(q), to64(k), to64(v), s, o)
				if err != nil {
					t.Fatal(err)
				}
				args := qkvTensors(q, k, v, s)
				var maskT *tensors.Tensor
				if gm.tensor != nil {
					maskT = gm.tensor(s, o)
					args = append(args, maskT)
				}
				const scale = 0 // default: 1/√head_dim
				for _, fn := range []struct {
					name  string
					build func(in []*graph.Node) *graph.Node
				}{
					{"NaiveGraph", func(in []*graph.Node) *graph.Node {
						return NaiveGraph(in[0], in[1], in[2], maskOf(in), scale)
					}},
					{"FusedGraph", func(in []*graph.Node) *graph.Node {
						out, fused := FusedGraph(in[0], in[1], in[2], maskOf(in), scale)
						if fused != be.Capabilities().Operations[compute.OpTypeFusedScaledDotProductAttention] {
							t.Errorf("FusedGraph: fused = %v on backend %s", fused, be.Name())
						}
						return out
					}},
				} {
					out, err := graph.ExecOnce(be, fn.build, args...)
					if err != nil {
						t.Fatalf("%s: %v", fn.name, err)
					}
					checkTensorShape(t, fn.name, out, s)
					compare(t, fn.name, tensors.MustCopyFlatData[float32](out), want, tol32Abs, tol32Rel)
				}
				if gm.name == "causal [1,1,Sq,Sk]" {
					maskT = nil // FusedTensors takes causal as a flag
				}
				out, err := FusedTensors(args[0].(*tensors.Tensor), args[1].(*tensors.Tensor), args[2].(*tensors.Tensor), maskT, scale, o != nil && o.Causal)
				if err != nil {
					t.Fatal(err)
				}
				checkTensorShape(t, "FusedTensors", out, s)
				compare(t, "FusedTensors", tensors.MustCopyFlatData[float32](out), want, tol32Abs, tol32Rel)
			})
		}
	}
}

func maskOf(in []*graph.Node) *graph.Node {
	if len(in) > 3 {
		return in[3]
	}
	return nil
}

func checkTensorShape(t *testing.T, name string, out *tensors.Tensor, s Shape) {
	t.Helper()
	want := []int{s.Batch, s.Heads, s.SeqQ, s.HeadDim}
	got := out.Shape().Dimensions
	if len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("%s: output shape %s, want %v", name, out.Shape(), want)
	}
}

// TestFusedTensorsFloat16 runs FusedTensors on Float16 tensors with a
// Float16 additive mask.
func TestFusedTensorsFloat16(t *testing.T) {
	s := NewShape(2, 2, 30, 40, 16)
	rng := rand.New(rand.NewPCG(9, 10))
	q, k, v := randomInputs(s, rng)
	qh, kh, vh := toHalf(q), toHalf(k), toHalf(v)
	o := keyBias(s, rng)
	for i, b := range o.KeyBias {
		if b != 0 {
			o.KeyBias[i] = -65504 // float16's lowest, as BERT would use in half precision
		}
	}
	want, err := Reference(to64(fromHalf(qh)), to64(fromHalf(kh)), to64(fromHalf(vh)), s, o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FusedTensors(
		tensors.FromFlatDataAndDimensions(qh, s.Batch, s.Heads, s.SeqQ, s.HeadDim),
		tensors.FromFlatDataAndDimensions(kh, s.Batch, s.Heads, s.SeqK, s.HeadDim),
		tensors.FromFlatDataAndDimensions(vh, s.Batch, s.Heads, s.SeqK, s.HeadDim),
		tensors.FromFlatDataAndDimensions(toHalf(o.KeyBias), s.Batch, s.SeqK), 0, false)
	if err != nil {
		t.Fatal(err)
	}
	checkTensorShape(t, "FusedTensors", out, s)
	compare(t, "FusedTensors float16", fromHalf(tensors.MustCopyFlatData[float16.Float16](out)), want, tol32Abs, tol32Rel+tol16Rel)
}

// TestLabOnesGraph is spec §9 item 34 for the GoMLX paths: ones(32, 8,
// 128, 64) in float16 through NaiveGraph (on the test backend) and
// FusedTensors gives all 1.0 with the shape [32, 8, 128, 64].
func TestLabOnesGraph(t *testing.T) {
	be := testBackend(t)
	s := labShape
	ones := make([]float16.Float16, s.QSize())
	for i := range ones {
		ones[i] = halfFromF32(1)
	}
	x := tensors.FromFlatDataAndDimensions(ones, 32, 8, 128, 64)
	naive, err := graph.ExecOnce(be, func(q, k, v *graph.Node) *graph.Node { return NaiveGraph(q, k, v, nil, 0) }, x, x, x)
	if err != nil {
		t.Fatal(err)
	}
	fusedOut, err := FusedTensors(x, x, x, nil, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]*tensors.Tensor{"NaiveGraph": naive, "FusedTensors": fusedOut} {
		checkTensorShape(t, name, out, s)
		for i, h := range tensors.MustCopyFlatData[float16.Float16](out) {
			if halfToF32(h) != 1 {
				t.Fatalf("%s: out[%d] = %v, want 1.0", name, i, halfToF32(h))
			}
		}
	}
}

// TestGraphErrors: bad shapes and masks name the shapes and what is
// allowed, for NaiveGraph / FusedGraph (a panic turned into ExecOnce's
// error) and FusedTensors.
func TestGraphErrors(t *testing.T) {
	be := testBackend(t)
	f32 := func(dims ...int) *tensors.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return tensors.FromFlatDataAndDimensions(make([]float32, n), dims...)
	}
	q, kv := f32(2, 3, 4, 8), f32(2, 3, 5, 8)
	cases := []struct {
		name    string
		args    []any
		want    string
		tensors bool // also for FusedTensors
	}{
		{"rank 3", []any{f32(2, 3, 4), kv, kv}, "all must have rank 4", false},
		{"head_dim", []any{q, f32(2, 3, 5, 7), f32(2, 3, 5, 7)}, "k and v must both be [batch, heads, seq_k, head_dim] = [2 3 seq_k 8]", false},
		{"k != v", []any{q, kv, f32(2, 3, 6, 8)}, "k and v must both be", false},
		{"dtype", []any{q, kv, tensors.FromFlatDataAndDimensions(make([]float64, 2*3*5*8), 2, 3, 5, 8)}, "same float dtype", false},
		{"mask rank 3", []any{q, kv, kv, f32(2, 1, 5)}, "allowed are [batch, seq_k] = [2 5] or rank 4", true},
		{"mask [B,Sq]", []any{q, kv, kv, f32(2, 4)}, "key-padding mask [batch, seq_k] = [2 5]", true},
		{"mask rank 4", []any{q, kv, kv, f32(2, 3, 4, 4)}, "must broadcast to the scores [batch, heads, seq_q, seq_k] = [2 3 4 5]", false},
		{"mask dtype", []any{q, kv, kv, tensors.FromFlatDataAndDimensions(make([]int32, 10), 2, 5)}, "Bool (true = attend) or a float", false},
	}
	for _, tc := range cases {
		for _, name := range []string{"NaiveGraph", "FusedGraph"} {
			_, err := graph.ExecOnce(be, func(in []*graph.Node) *graph.Node {
				if name == "NaiveGraph" {
					return NaiveGraph(in[0], in[1], in[2], maskOf(in), 0)
				}
				out, _ := FusedGraph(in[0], in[1], in[2], maskOf(in), 0)
				return out
			}, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sdpa."+name) {
				t.Errorf("%s %s: error %v, want one containing %q", tc.name, name, err, tc.want)
			}
		}
	}

	tcases := []struct {
		name    string
		q, k, v *tensors.Tensor
		mask    *tensors.Tensor
		want    string
	}{
		{"rank", f32(2, 3, 4), kv, kv, nil, "want q [batch, heads, seq_q, head_dim] and k, v both [batch, heads, seq_k, head_dim]"},
		{"heads", q, f32(2, 2, 5, 8), f32(2, 2, 5, 8), nil, "k (Float32)[2, 2, 5, 8]"},
		{"dtype", tensors.FromFlatDataAndDimensions(make([]float64, 2*3*4*8), 2, 3, 4, 8), kv, kv, nil, "must be Float32 or Float16"},
		{"mask shape", q, kv, kv, f32(2, 1, 4, 5), "the kernel takes a key-padding mask [batch, seq_k] = [2 5] or [batch, 1, 1, seq_k] = [2 1 1 5]"},
		{"mask dtype", q, kv, kv, tensors.FromFlatDataAndDimensions(make([]int32, 10), 2, 5), "Bool (true = attend) or Float32, Float16, Float64"},
	}
	for _, tc := range tcases {
		_, err := FusedTensors(tc.q, tc.k, tc.v, tc.mask, 0, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "sdpa.FusedTensors") {
			t.Errorf("FusedTensors %s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := FusedTensors(q, kv, kv, nil, math.Inf(1), false); err == nil || !strings.Contains(err.Error(), "must be finite") {
		t.Errorf("FusedTensors scale +Inf: error %v", err)
	}
}

// TestFusedTensorsSeqMajor: the seq-major tensor entry point gives, in the
// [batch, seq, heads, head_dim] layout, what FusedTensors gives for the
// transposed tensors, mask included; a head-major shape whose axes do not
// match is refused.
func TestFusedTensorsSeqMajor(t *testing.T) {
	s := NewShape(2, 3, 9, 11, 16)
	q, k, v := randomInputs(s, rand.New(rand.NewPCG(3, 4)))
	mask := make([]float32, s.Batch*s.SeqK)
	mask[3] = -1e4
	maskT := tensors.FromFlatDataAndDimensions(mask, s.Batch, s.SeqK)
	want, err := FusedTensors(tensors.FromFlatDataAndDimensions(q, 2, 3, 9, 16), tensors.FromFlatDataAndDimensions(k, 2, 3, 11, 16),
		tensors.FromFlatDataAndDimensions(v, 2, 3, 11, 16), maskT, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	seq := func(x []float32, n int) *tensors.Tensor {
		return tensors.FromFlatDataAndDimensions(swapAxes12(x, 2, 3, n, 16), 2, n, 3, 16)
	}
	got, err := FusedTensorsSeqMajor(seq(q, 9), seq(k, 11), seq(v, 11), maskT, 0)
	if err != nil {
		t.Fatal(err)
	}
	if dims := got.Shape().Dimensions; len(dims) != 4 || dims[1] != 9 || dims[2] != 3 {
		t.Fatalf("output %s, want [2 9 3 16]", got.Shape())
	}
	back := swapAxes12(tensors.MustCopyFlatData[float32](got), 2, 9, 3, 16)
	w := tensors.MustCopyFlatData[float32](want)
	for i := range w {
		if back[i] != w[i] {
			t.Fatalf("element %d: %v seq-major, %v head-major", i, back[i], w[i])
		}
	}
	_, err = FusedTensorsSeqMajor(seq(q, 9), tensors.FromFlatDataAndDimensions(k, 2, 3, 11, 16), tensors.FromFlatDataAndDimensions(v, 2, 3, 11, 16), nil, 0)
	if err == nil || !strings.Contains(err.Error(), "sdpa.FusedTensorsSeqMajor") || !strings.Contains(err.Error(), "[batch, seq_q, heads, head_dim]") {
		t.Fatalf("mismatched heads: error %v", err)
	}
}
