package perf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/kernels/sdpa"
	"github.com/gomase/gomase/mase/backend"
)

// LoopTiming says how a graph benchmark timed its kernels: each figure is
// the median over Timings calls of an executable repeating the kernel
// Reps times (InLoop), next to the backend's dispatch floor.
type LoopTiming struct {
	Backend string `json:"backend"`
	// Kernels says which of gomase's CUDA kernels the backend's graphs
	// call (empty on the Go backend).
	Kernels         string  `json:"cuda_kernels,omitempty"`
	Reps            int     `json:"reps_per_call"`
	Timings         int     `json:"timings"`
	DispatchFloorMs float64 `json:"dispatch_floor_ms"`
}

// measureFloor records be's dispatch floor.
func (t *LoopTiming) measureFloor(be compute.Backend) error {
	floor, err := DispatchFloor(be, 50)
	t.DispatchFloorMs = ms(floor)
	if !backend.IsGo(be) {
		t.Kernels = backend.Kernels(be).String()
	}
	return err
}

// SDPAGraphReport is what SDPAGraph measured.
type SDPAGraphReport struct {
	LoopTiming
	Shape []int  `json:"shape"` // batch, heads, seq, head_dim
	DType string `json:"dtype"`
	// Masked: an additive key-padding mask [batch, 1, 1, seq] was applied.
	Masked bool `json:"padding_mask"`
	// Fused is whether the backend ran its own fused attention op;
	// otherwise FusedGraph built the decomposition as NaiveGraph does.
	Fused   bool    `json:"backend_fused_op"`
	NaiveMs float64 `json:"naive_ms"`
	FusedMs float64 `json:"fused_ms"`
	Speedup float64 `json:"speedup"`
	// NaiveMaxAbsErr and FusedMaxAbsErr are each graph's largest
	// difference from the float64 reference, apart: a backend that rounds
	// its matmuls (TF32 on CUDA) shows in the naive graph's, a kernel's own
	// error in the fused one's.
	NaiveMaxAbsErr float64 `json:"naive_max_abs_error_vs_float64"`
	FusedMaxAbsErr float64 `json:"fused_max_abs_error_vs_float64"`
}

// SDPAGraph times kernels/sdpa's NaiveGraph and FusedGraph on be for
// random q = k = v shapes [batch, heads, seq, head_dim] of dtype float32
// or float16, with an additive key-padding mask when masked (batch b
// keeps seq − (b mod 4)·seq/8 keys, the others get −10⁴): each repetition
// feeds its output back as the next q. Both graphs are first run once and
// checked against the float64 reference.
func SDPAGraph(be compute.Backend, shape [4]int, dtype dtypes.DType, masked bool, reps, timings int) (*SDPAGraphReport, error) {
	if dtype != dtypes.Float32 && dtype != dtypes.Float16 {
		return nil, fmt.Errorf("perf: SDPA dtype %s (allowed: float32, float16)", dtype)
	}
	if timings < 1 {
		return nil, fmt.Errorf("perf: at least one timing (got %d)", timings)
	}
	s := sdpa.NewShape(shape[0], shape[1], shape[2], shape[2], shape[3])
	rng := rand.New(rand.NewPCG(3, 4))
	var in [3]*tensors.Tensor
	var in64 [3][]float64
	for i := range in {
		x := make([]float64, s.QSize())
		for j := range x {
			x[j] = rng.NormFloat64()
		}
		if dtype == dtypes.Float16 {
			h := make([]float16.Float16, len(x))
			for j, f := range x {
				h[j] = float16.FromFloat64(f)
				x[j] = h[j].Float64() // the reference sees the rounded inputs
			}
			in[i] = tensors.FromFlatDataAndDimensions(h, shape[:]...)
		} else {
			f := make([]float32, len(x))
			for j, v := range x {
				f[j] = float32(v)
				x[j] = float64(f[j])
			}
			in[i] = tensors.FromFlatDataAndDimensions(f, shape[:]...)
		}
		in64[i] = x
	}
	args := in[:]
	var opts *sdpa.Options
	if masked {
		bias := make([]float32, s.Batch*s.SeqK)
		for b := range s.Batch {
			for j := s.SeqK - (b%4)*s.SeqK/8; j < s.SeqK; j++ {
				bias[b*s.SeqK+j] = -1e4
			}
		}
		opts = &sdpa.Options{KeyBias: bias}
		args = append(args, tensors.FromFlatDataAndDimensions(bias, s.Batch, 1, 1, s.SeqK))
		defer args[3].MustFinalizeAll()
	}
	ref, err := sdpa.Reference(in64[0], in64[1], in64[2], s, opts)
	if err != nil {
		return nil, err
	}
	r := &SDPAGraphReport{LoopTiming: LoopTiming{Backend: be.Name(), Reps: reps, Timings: timings}, Shape: shape[:],
		DType: strings.ToLower(dtype.String()), Masked: masked}
	mask := func(st []*graph.Node) *graph.Node {
		if masked {
			return st[3]
		}
		return nil
	}
	naive := func(st []*graph.Node) *graph.Node { return sdpa.NaiveGraph(st[0], st[1], st[2], mask(st), 0) }
	fused := func(st []*graph.Node) *graph.Node {
		out, ok := sdpa.FusedGraph(st[0], st[1], st[2], mask(st), 0)
		r.Fused = ok
		return out
	}
	var loops []*InLoop
	defer func() {
		for _, l := range loops {
			l.Close()
		}
	}()
	errs := []*float64{&r.NaiveMaxAbsErr, &r.FusedMaxAbsErr}
	for i, attention := range []func(st []*graph.Node) *graph.Node{naive, fused} {
		out, err := graph.ExecOnce(be, func(ins []*graph.Node) *graph.Node {
			return graph.ConvertDType(attention(ins), dtypes.Float64)
		}, toAny(args)...)
		if err != nil {
			return nil, err
		}
		got, err := tensors.CopyFlatData[float64](out)
		out.MustFinalizeAll()
		if err != nil {
			return nil, err
		}
		for j := range ref {
			*errs[i] = math.Max(*errs[i], math.Abs(got[j]-ref[j]))
		}
		l, err := NewInLoop(be, reps, func(_ Counter, st []*graph.Node) ([]*graph.Node, error) {
			return append([]*graph.Node{attention(st)}, st[1:]...), nil
		})
		if err != nil {
			return nil, err
		}
		loops = append(loops, l)
	}
	ts, err := alternate(loops, timings, args...)
	if err != nil {
		return nil, err
	}
	r.NaiveMs, r.FusedMs = ms(ts[0]), ms(ts[1])
	r.Speedup = r.NaiveMs / r.FusedMs
	return r, r.measureFloor(be)
}

// MXInt8GraphReport is what MXInt8Graph measured.
type MXInt8GraphReport struct {
	LoopTiming
	Values    int `json:"values"`
	GroupSize int `json:"group_size"`
	// Bytes is what one dequantisation reads and writes: int8 mantissas,
	// uint8 exponents, bfloat16 values.
	Bytes     int     `json:"bytes_moved"`
	DequantMs float64 `json:"dequantize_ms"`
	// ElementwiseMs is one pass that reads and writes the same number of
	// bytes (int32 XOR): the memory system's pace inside a graph.
	ElementwiseMs  float64 `json:"elementwise_ms"`
	DequantGBs     float64 `json:"dequantize_gb_per_s"`
	ElementwiseGBs float64 `json:"elementwise_gb_per_s"`
	Ratio          float64 `json:"dequantize_over_elementwise"`
	BitExact       bool    `json:"bit_exact"`
}

// MXInt8Graph times kernels/mxint8's DequantizeGraph on be for values
// random values in groups of groupSize, next to an elementwise pass over
// the same bytes, after checking the graph bit-exact against
// DequantizeReference. Each repetition's input depends on the loop
// counter (a XOR with a value that is zero at run time), so the backend
// cannot hoist the dequantisation out of the loop.
func MXInt8Graph(be compute.Backend, values, groupSize, reps, timings int) (*MXInt8GraphReport, error) {
	if err := mxint8.CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	if values < 1 || timings < 1 {
		return nil, fmt.Errorf("perf: at least one value and one timing (got %d, %d)", values, timings)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, values)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	p, err := mxint8.Pack(vals, groupSize)
	if err != nil {
		return nil, err
	}
	m := tensors.FromFlatDataAndDimensions(p.Mantissas(), values)
	e := tensors.FromFlatDataAndDimensions(p.Exponents(), p.NumGroups())
	r := &MXInt8GraphReport{LoopTiming: LoopTiming{Backend: be.Name(), Reps: reps, Timings: timings},
		Values: values, GroupSize: groupSize, Bytes: p.Bytes() + 2*values}
	out, err := graph.ExecOnce(be, func(m, e *graph.Node) *graph.Node {
		y, err := mxint8.DequantizeGraph(m, e, groupSize)
		if err != nil {
			panic(err)
		}
		return y
	}, m, e)
	if err != nil {
		return nil, err
	}
	got, err := tensors.CopyFlatData[bfloat16.BFloat16](out)
	out.MustFinalizeAll()
	if err != nil {
		return nil, err
	}
	want := mxint8.DequantizeReference(p)
	r.BitExact = len(got) == len(want)
	for i := range want {
		if r.BitExact && got[i].Bits() != want[i].Bits() {
			r.BitExact = false
		}
	}
	// zeroAt is 0 at run time but depends on the counter: i >> 31 for i ≥ 0.
	zeroAt := func(i Counter, dtype dtypes.DType) *graph.Node {
		return graph.ConvertDType(graph.BitwiseShiftRightArithmeticScalar(i, 31), dtype)
	}
	dequant, err := NewInLoop(be, reps, func(i Counter, st []*graph.Node) ([]*graph.Node, error) {
		m := graph.BitwiseXor(st[1], zeroAt(i, dtypes.Int8))
		y, err := mxint8.DequantizeGraph(m, st[2], groupSize)
		return []*graph.Node{y, st[1], st[2]}, err
	})
	if err != nil {
		return nil, err
	}
	defer dequant.Close()
	elementwise, err := NewInLoop(be, reps, func(i Counter, st []*graph.Node) ([]*graph.Node, error) {
		return []*graph.Node{graph.BitwiseXor(st[0], zeroAt(i, dtypes.Int32))}, nil
	})
	if err != nil {
		return nil, err
	}
	defer elementwise.Close()
	// The elementwise pass reads and writes 4-byte words: Bytes/8 of them
	// move Bytes.
	words := tensors.FromFlatDataAndDimensions(make([]int32, max(1, r.Bytes/8)), max(1, r.Bytes/8))
	ts, err := alternateInputs([]*InLoop{dequant, elementwise}, timings,
		[][]*tensors.Tensor{{tensors.FromShape(shapes.Make(dtypes.BFloat16, values)), m, e}, {words}})
	if err != nil {
		return nil, err
	}
	r.DequantMs, r.ElementwiseMs = ms(ts[0]), ms(ts[1])
	r.DequantGBs, r.ElementwiseGBs = GBs(r.Bytes, ts[0]), GBs(r.Bytes, ts[1])
	r.Ratio = r.DequantGBs / r.ElementwiseGBs
	return r, r.measureFloor(be)
}

// alternate times loops on the same inputs, taking turns so that each
// sees the same load; one untimed call each first compiles them.
func alternate(loops []*InLoop, timings int, inputs ...*tensors.Tensor) ([]time.Duration, error) {
	ins := make([][]*tensors.Tensor, len(loops))
	for i := range ins {
		ins[i] = inputs
	}
	return alternateInputs(loops, timings, ins)
}

// alternateInputs is alternate with each loop's own inputs; it returns
// each loop's median time per repetition.
func alternateInputs(loops []*InLoop, timings int, inputs [][]*tensors.Tensor) ([]time.Duration, error) {
	ts := make([][]time.Duration, len(loops))
	for k := -1; k < timings; k++ {
		for i, l := range loops {
			d, _, err := l.Time(inputs[i]...)
			if err != nil {
				return nil, err
			}
			if k >= 0 {
				ts[i] = append(ts[i], d)
			}
		}
	}
	out := make([]time.Duration, len(loops))
	for i := range ts {
		out[i] = Summarise(ts[i]).Median
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// toAny returns ts as a []any (graph.ExecOnce's arguments).
func toAny(ts []*tensors.Tensor) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = t
	}
	return out
}
