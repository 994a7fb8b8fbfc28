package mxint8

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
)

// DequantizeGraph is the MXINT8 dequantiser as a GoMLX op, usable inside
// any compiled graph: mantissas (int8, shape [N]) and exponents (uint8,
// shape [ceil(N/groupSize)]; the last group may be partial) give the
// bfloat16 values [N], bit-exact with DequantizeReference on canonical
// encodings (see NewPacked). It computes float32(m)·2^(E−133), the scale
// built from E's bits (2^(E−133) is a float32 subnormal below E = 7), and
// converts the exact product to bfloat16. Inside a graph nothing checks
// the encoding: a non-canonical one decodes as m/64·2^(E−127) would in
// float32.
//
// The output is a constant for differentiation (StopGradient): graphs
// that train other parameters around it work. Errors name a wrong dtype,
// rank, exponent count or group size; GoMLX failures while building are
// returned as errors too.
func DequantizeGraph(mantissas, exponents *graph.Node, groupSize int) (out *graph.Node, err error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	if mantissas == nil || exponents == nil {
		return nil, fmt.Errorf("mxint8: dequantize graph: mantissas and exponents must be nodes (got nil)")
	}
	ms, es := mantissas.Shape(), exponents.Shape()
	if ms.DType != dtypes.Int8 || ms.Rank() != 1 {
		return nil, fmt.Errorf("mxint8: dequantize graph: mantissas are %s (allowed: int8 of rank 1)", ms)
	}
	if es.DType != dtypes.Uint8 || es.Rank() != 1 {
		return nil, fmt.Errorf("mxint8: dequantize graph: exponents are %s (allowed: uint8 of rank 1)", es)
	}
	n := ms.Dimensions[0]
	groups := NumGroups(n, groupSize)
	if n < 1 || es.Dimensions[0] != groups {
		return nil, fmt.Errorf("mxint8: dequantize graph: %d exponents for %d mantissas in groups of %d (allowed: at least one mantissa and one exponent per group, %d)",
			es.Dimensions[0], n, groupSize, groups)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("mxint8: dequantize graph: %v", r)
		}
	}()
	g := mantissas.Graph()
	m := graph.ConvertDType(mantissas, dtypes.Float32)
	if pad := groups*groupSize - n; pad > 0 {
		m = graph.Pad(m, graph.ScalarZero(g, dtypes.Float32), compute.PadAxis{End: pad})
	}
	m = graph.Reshape(m, groups, groupSize)
	// [groups, 1] broadcasts along the group implicitly (an explicit
	// BroadcastToDims inside a While body fails on the Go backend of
	// compute v0.1.2: "input 1 for node Mul not computed yet").
	scale := graph.Reshape(scaleGraph(exponents), groups, 1)
	y := graph.Mul(m, scale)
	y = graph.Reshape(graph.ConvertDType(y, dtypes.BFloat16), groups*groupSize)
	if groups*groupSize != n {
		y = graph.Slice(y, graph.AxisRange(0, n))
	}
	// Packed data is integer: no gradient flows back into it (and GoMLX
	// has none for Bitcast).
	return graph.StopGradient(y), nil
}

// scaleGraph returns 2^(E−133) as float32 for uint8 exponents E, from its
// bits: (E−6)<<23 for a normal result (E ≥ 7), 1<<(E+16) for a subnormal.
func scaleGraph(exponents *graph.Node) *graph.Node {
	e := graph.ConvertDType(exponents, dtypes.Int32)
	normal := graph.BitwiseShiftLeftScalar(graph.AddScalar(e, -6), 23)
	subnormal := graph.BitwiseShiftLeft(graph.OnesLike(e), graph.AddScalar(e, 16))
	bits := graph.Where(graph.GreaterOrEqual(e, graph.Scalar(e.Graph(), dtypes.Int32, 7)), normal, subnormal)
	return graph.Bitcast(bits, dtypes.Float32)
}

// Packed data is held in a model store as int32 words (4 bytes each,
// little-endian, the last word zero-padded): the checkpoint format stores
// float32 and int32 tensors only.

// Words packs bytes into little-endian int32 words.
func Words[T int8 | uint8](b []T) []int32 {
	out := make([]int32, (len(b)+3)/4)
	for i, v := range b {
		out[i/4] |= int32(uint32(uint8(v)) << (8 * (i % 4)))
	}
	return out
}

// Unwords is the inverse of words for n bytes.
func Unwords[T int8 | uint8](w []int32, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = T(uint8(uint32(w[i/4]) >> (8 * (i % 4))))
	}
	return out
}

// UnwordsGraph unpacks int32 words [..., W] into dtype (int8 or uint8)
// bytes [..., 4W], keeping the first n along the last axis when n ≥ 0.
func UnwordsGraph(w *graph.Node, dtype dtypes.DType, n int) *graph.Node {
	dims := w.Shape().Dimensions
	b := graph.Bitcast(w, dtype) // [..., W, 4], little-endian
	out := append(append([]int{}, dims[:len(dims)-1]...), 4*dims[len(dims)-1])
	b = graph.Reshape(b, out...)
	if n >= 0 && n != out[len(out)-1] {
		specs := make([]graph.SliceAxisSpec, len(out))
		for i := range specs {
			specs[i] = graph.AxisRange()
		}
		specs[len(out)-1] = graph.AxisRange(0, n)
		b = graph.Slice(b, specs...)
	}
	return b
}
