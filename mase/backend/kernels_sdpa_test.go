package backend_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/cuda"
	"github.com/gomase/gomase/kernels/sdpa"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/perf"
)

// attentionWithOps answers the attention kernel's custom call with the
// backend's own ops (in float32) and records the calls.
func attentionWithOps(calls *[]cuda.SDPAConfig) backend.EmitFunc {
	return func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
		c, err := cuda.ParseSDPAConfig(call.Config)
		if err != nil {
			return nil, err
		}
		*calls = append(*calls, c)
		var mask compute.Value
		if len(operands) == 4 {
			mask = operands[3]
		}
		out, err := opsAttention(fn, c, operands[0], operands[1], operands[2], mask)
		return []compute.Value{out}, err
	}
}

// opsAttention is softmax(q·kᵀ·c.Scale + mask)·v in fn's own ops, in
// float32, the result in c.DType; mask (nil: none) broadcasts to the
// scores' shape.
func opsAttention(fn compute.Function, c cuda.SDPAConfig, q, k, v, mask compute.Value) (compute.Value, error) {
	var firstErr error
	do := func(v compute.Value, err error) compute.Value {
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	}
	f32 := func(v compute.Value) compute.Value { return do(fn.ConvertDType(v, dtypes.Float32)) }
	q, k, v = f32(q), f32(k), f32(v)
	dims := []int{c.Batch, c.Heads, c.SeqQ, c.SeqK}
	scoresShape := shapes.Make(dtypes.Float32, dims...)
	full := func(x compute.Value, axes []int) compute.Value {
		return do(fn.BroadcastInDim(x, scoresShape, axes))
	}
	s := do(fn.DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}, compute.DotGeneralConfig{}))
	scale := do(fn.Reshape(do(fn.Constant([]float32{c.Scale}))))
	s = do(fn.Mul(s, full(scale, nil)))
	if mask != nil {
		s = do(fn.Add(s, full(f32(mask), []int{0, 1, 2, 3})))
	}
	rowAxes := []int{0, 1, 2}
	e := do(fn.Exp(do(fn.Sub(s, full(do(fn.ReduceMax(s, 3)), rowAxes)))))
	p := do(fn.Div(e, full(do(fn.ReduceSum(e, 3)), rowAxes)))
	out := do(fn.DotGeneral(p, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}, compute.DotGeneralConfig{}))
	return do(fn.ConvertDType(out, c.DType)), firstErr
}

// biasOnlyAttention is a backend whose fused attention takes what cuDNN's
// does through go-xla: half precision, no mask operand, a bias of the
// scores' full shape in q's dtype. It records the biases' shapes.
type biasOnlyAttention struct {
	compute.Backend
	biases *[]shapes.Shape
}

func (b biasOnlyAttention) Builder(name string) compute.Builder {
	return biasOnlyBuilder{Builder: b.Backend.Builder(name), biases: b.biases}
}

type biasOnlyBuilder struct {
	compute.Builder
	biases *[]shapes.Shape
}

func (b biasOnlyBuilder) Main() compute.Function {
	return biasOnlyFunction{Function: b.Builder.Main(), biases: b.biases}
}

type biasOnlyFunction struct {
	compute.Function
	biases *[]shapes.Shape
}

func (f biasOnlyFunction) FusedScaledDotProductAttention(q, k, v compute.Value, layout compute.AttentionAxesLayout,
	opts *compute.ScaledDotProductAttentionConfig) (compute.Value, []compute.Value, error) {
	qs, err := f.Builder().OpShape(q)
	if err != nil {
		return nil, nil, err
	}
	ks, err := f.Builder().OpShape(k)
	if err != nil {
		return nil, nil, err
	}
	if !qs.DType.IsHalfPrecision() || opts == nil || opts.Mask != nil || layout != compute.AttentionAxesLayoutBHSD {
		return nil, nil, compute.ErrNotImplemented
	}
	c := cuda.SDPAConfig{Batch: qs.Dimensions[0], Heads: qs.Dimensions[1], SeqQ: qs.Dimensions[2], SeqK: ks.Dimensions[2],
		HeadDim: qs.Dimensions[3], DType: qs.DType, Scale: float32(opts.Scale)}
	if opts.Bias != nil {
		bs, err := f.Builder().OpShape(opts.Bias)
		if err != nil {
			return nil, nil, err
		}
		if !bs.Equal(shapes.Make(qs.DType, c.Batch, c.Heads, c.SeqQ, c.SeqK)) {
			return nil, nil, compute.ErrNotImplemented
		}
		*f.biases = append(*f.biases, bs)
	}
	out, err := opsAttention(f.Function, c, q, k, v, opts.Bias)
	return out, nil, err
}

// attention runs build on be with q, k, v and mask (nil: none) and
// returns the output as float64.
func attention(t *testing.T, be compute.Backend, build func(q, k, v, mask *graph.Node) *graph.Node, in []*tensors.Tensor) []float64 {
	t.Helper()
	exec, err := graph.NewExec(be, func(xs []*graph.Node) *graph.Node {
		var mask *graph.Node
		if len(xs) == 4 {
			mask = xs[3]
		}
		return graph.ConvertDType(build(xs[0], xs[1], xs[2], mask), dtypes.Float64)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	args := make([]any, len(in))
	for i, x := range in {
		c, err := x.LocalClone() // each backend gets tensors of its own
		if err != nil {
			t.Fatal(err)
		}
		defer c.FinalizeAll()
		args[i] = c
	}
	outs, err := exec.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	defer outs[0].FinalizeAll()
	v, err := tensors.CopyFlatData[float64](outs[0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestFusedAttentionCallsKernel: sdpa.FusedGraph on a backend with the
// attention kernel calls it for float32 and for masked float16 the
// backend's op does not take (seq_q ≠ seq_k), with the sizes, scale and
// mask of the graph; masked float16 with seq_q = seq_k goes to the
// backend's op with the mask as a bias. Every output is NaiveGraph's.
func TestFusedAttentionCallsKernel(t *testing.T) {
	goBE := openGo(t)
	var calls []cuda.SDPAConfig
	var biases []shapes.Shape
	kb := backend.WithKernels(biasOnlyAttention{Backend: goBE, biases: &biases}, backend.KernelSet{SDPA: true}, attentionWithOps(&calls))
	B, H, Sk, D := 2, 3, 7, 8
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		dtype  dtypes.DType
		mask   bool
		sq     int
		kernel bool
		tol    float64
	}{
		{dtypes.Float32, false, 5, true, 1e-5}, {dtypes.Float32, true, 5, true, 1e-5},
		{dtypes.Float16, true, 5, true, 2e-3}, {dtypes.Float16, true, Sk, false, 2e-3},
	} {
		Sq := tc.sq
		values := func(dims ...int) *tensors.Tensor {
			n := 1
			for _, d := range dims {
				n *= d
			}
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			if tc.dtype == dtypes.Float16 {
				h := make([]float16.Float16, n)
				for i := range x {
					h[i] = float16.FromFloat32(x[i])
				}
				return tensors.FromFlatDataAndDimensions(h, dims...)
			}
			return tensors.FromFlatDataAndDimensions(x, dims...)
		}
		in := []*tensors.Tensor{values(B, H, Sq, D), values(B, H, Sk, D), values(B, H, Sk, D)}
		if tc.mask {
			m := make([]float32, B*Sk)
			for i := range m {
				if rng.Float64() < 0.3 {
					m[i] = -1e4
				}
			}
			in = append(in, tensors.FromFlatDataAndDimensions(m, B, 1, 1, Sk))
		}
		before, biasesBefore := len(calls), len(biases)
		var fused bool
		got := attention(t, kb, func(q, k, v, mask *graph.Node) *graph.Node {
			out, ok := sdpa.FusedGraph(q, k, v, mask, 0.3)
			fused = ok
			return out
		}, in)
		want := attention(t, goBE, func(q, k, v, mask *graph.Node) *graph.Node { return sdpa.NaiveGraph(q, k, v, mask, 0.3) }, in)
		kernelCalls, biasCalls := len(calls)-before, len(biases)-biasesBefore
		if !fused || tc.kernel && (kernelCalls != 1 || biasCalls != 0) || !tc.kernel && (kernelCalls != 0 || biasCalls != 1) {
			t.Fatalf("%s mask=%v seq_q=%d: fused %v, %d kernel calls, %d backend calls with a bias", tc.dtype, tc.mask, Sq, fused, kernelCalls, biasCalls)
		}
		if tc.kernel {
			c := calls[len(calls)-1]
			if c.Batch != B || c.Heads != H || c.SeqQ != Sq || c.SeqK != Sk || c.HeadDim != D || c.DType != tc.dtype || c.Scale != 0.3 ||
				(tc.mask && (len(c.MaskDims) != 4 || c.MaskDims[0] != B || c.MaskDims[3] != Sk)) || (!tc.mask && c.MaskDims != nil) {
				t.Errorf("%s mask=%v: kernel called with %+v", tc.dtype, tc.mask, c)
			}
		}
		for i := range want {
			if d := math.Abs(got[i] - want[i]); d > tc.tol {
				t.Fatalf("%s mask=%v: output %d is %g, NaiveGraph's %g", tc.dtype, tc.mask, i, got[i], want[i])
			}
		}
		for _, x := range in {
			x.FinalizeAll()
		}
	}
}

// TestFusedAttentionKernelInLoop: the attention kernel is called inside a
// loop's body too (perf.SDPAGraph times FusedGraph inside a While). The
// emitter here returns q: the Go backend cannot broadcast inside a While
// body (the loop's numbers are the GPU's to check).
func TestFusedAttentionKernelInLoop(t *testing.T) {
	goBE := openGo(t)
	var calls []string
	kb := backend.WithKernels(goBE, backend.KernelSet{SDPA: true}, func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error) {
		calls = append(calls, call.Config)
		return operands[:1], nil
	})
	r, err := perf.SDPAGraph(kb, [4]int{2, 2, 16, 8}, dtypes.Float32, true, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Once for the check, once in each loop's body (built once, run 3
	// times): the fused graph's loop.
	if !r.Fused || len(calls) != 2 {
		t.Errorf("fused %v, calls %q", r.Fused, calls)
	}
}
