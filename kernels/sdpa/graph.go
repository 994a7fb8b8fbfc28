package sdpa

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
)

// NaiveGraph builds softmax(Q·Kᵀ·scale [+ mask])·V from GoMLX ops — the
// lab's naive decomposition: Einsum (Q·Kᵀ), MulScalar, Add (additive mask)
// or MaskedSoftmax (boolean mask), Softmax, Einsum (·V). In a compiled
// graph the backend is free to fuse these (XLA does); on the Go backend
// each runs as its own op.
//
// q is [batch, heads, seq_q, head_dim]; k and v are
// [batch, heads, seq_k, head_dim], all of the same float dtype. scale 0
// selects 1/√head_dim. mask is nil, a key-padding mask [batch, seq_k], or
// any mask of rank 4 broadcastable to the scores [batch, heads, seq_q,
// seq_k] (e.g. BERT's extended mask [batch, 1, 1, seq_k], or a causal
// [1, 1, seq_q, seq_k]); a Bool mask keeps the keys where it is true
// (queries left with no key give zeros), any other dtype is added to the
// scaled scores. Bad shapes panic (GoMLX's convention for graph building)
// with an error naming the shapes.
func NaiveGraph(q, k, v, mask *graph.Node, scale float64) *graph.Node {
	scale, mask = checkGraph("NaiveGraph", q, k, v, mask, scale)
	return naiveGraph(q, k, v, mask, scale)
}

func naiveGraph(q, k, v, mask *graph.Node, scale float64) *graph.Node {
	scores := graph.Einsum("bhqd,bhkd->bhqk", q, k)
	scores = graph.MulScalar(scores, scale)
	var probs *graph.Node
	switch {
	case mask == nil:
		probs = softmax(scores)
	case mask.DType() == dtypes.Bool:
		probs = graph.MaskedSoftmax(scores, graph.BroadcastToShape(mask, scores.Shape()), -1)
	default:
		probs = softmax(graph.Add(scores, mask))
	}
	return graph.Einsum("bhqk,bhkd->bhqd", probs, v)
}

// softmax is graph.Softmax over the last axis, except in half precision,
// where it is spelled out (max, sub, exp, sum, div): graph.Softmax picks
// the Go backend's fused softmax, which then fails at run time for
// Float16 and BFloat16 (gomlx v0.28.2, compute v0.1.2).
func softmax(x *graph.Node) *graph.Node {
	if dt := x.DType(); dt != dtypes.Float16 && dt != dtypes.BFloat16 {
		return graph.Softmax(x, -1)
	}
	e := graph.Exp(graph.Sub(x, graph.StopGradient(graph.ReduceAndKeep(x, graph.ReduceMax, -1))))
	return graph.Div(e, graph.ReduceAndKeep(e, graph.ReduceSum, -1))
}

// FusedGraph is NaiveGraph through the backend's fused scaled-dot-product
// attention op (graph.BackendFusedScaledDotProductAttention) where the
// backend implements it for these inputs; otherwise it builds the
// NaiveGraph decomposition. fused reports which one was built.
//
// With gomlx v0.28.2 / compute v0.1.2 the fused op exists only on the XLA
// backend with a CUDA PJRT plugin (cuDNN flash attention: float16 or
// bfloat16, head_dim a multiple of 8, no materialised mask — with a mask it
// falls back). The Go backend carries an implementation but leaves it
// unregistered (slower than its SIMD matmuls), and XLA on CPU has none; on
// those FusedTensors runs this package's kernel instead, between compiled
// graphs. Arguments and panics are those of NaiveGraph.
func FusedGraph(q, k, v, mask *graph.Node, scale float64) (out *graph.Node, fused bool) {
	scale, mask = checkGraph("FusedGraph", q, k, v, mask, scale)
	caps := q.Graph().Backend().Capabilities()
	if !caps.Operations[compute.OpTypeFusedScaledDotProductAttention] {
		return naiveGraph(q, k, v, mask, scale), false
	}
	return graph.InternalFusedOpCaller(
		func() *graph.Node {
			cfg := &compute.ScaledDotProductAttentionConfig{Scale: scale}
			if mask != nil {
				cfg.Mask = graph.InternalBackendOutputs(mask)[0]
			}
			out, _ := graph.BackendFusedScaledDotProductAttention(q, k, v, compute.AttentionAxesLayoutBHSD, cfg)
			return out
		},
		func() *graph.Node { return naiveGraph(q, k, v, mask, scale) },
		// Without the backend's fused backward, gradients go through the
		// decomposition.
		!caps.Operations[compute.OpTypeFusedScaledDotProductAttentionVJP],
	)
}

// checkGraph validates the graph inputs, resolves the default scale and
// brings the mask to rank 4 (and an additive mask to q's dtype).
func checkGraph(fn string, q, k, v, mask *graph.Node, scale float64) (float64, *graph.Node) {
	fail := func(format string, args ...any) {
		panic(fmt.Errorf("sdpa.%s: "+format, append([]any{fn}, args...)...))
	}
	if q == nil || k == nil || v == nil {
		fail("q, k and v must all be given")
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	if qs.Rank() != 4 || ks.Rank() != 4 || vs.Rank() != 4 {
		fail("q %s, k %s, v %s: all must have rank 4, [batch, heads, seq, head_dim]", qs, ks, vs)
	}
	if !qs.DType.IsFloat() || ks.DType != qs.DType || vs.DType != qs.DType {
		fail("q %s, k %s, v %s: all must have the same float dtype", qs, ks, vs)
	}
	B, H, Sq, D := qs.Dimensions[0], qs.Dimensions[1], qs.Dimensions[2], qs.Dimensions[3]
	Sk := ks.Dimensions[2]
	if ks.Dimensions[0] != B || ks.Dimensions[1] != H || ks.Dimensions[3] != D || !vs.Equal(ks) {
		fail("q %s, k %s, v %s: with q [batch, heads, seq_q, head_dim], k and v must both be [batch, heads, seq_k, head_dim] = [%d %d seq_k %d]",
			qs, ks, vs, B, H, D)
	}
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(D))
	} else if math.IsNaN(scale) || math.IsInf(scale, 0) {
		fail("scale %v must be finite (0 selects 1/√head_dim)", scale)
	}
	if mask == nil {
		return scale, nil
	}
	ms := mask.Shape()
	want := []int{B, H, Sq, Sk}
	switch ms.Rank() {
	case 2:
		if ms.Dimensions[0] != B || ms.Dimensions[1] != Sk {
			fail("mask %s: a rank-2 mask is a key-padding mask [batch, seq_k] = [%d %d]", ms, B, Sk)
		}
		mask = graph.Reshape(mask, B, 1, 1, Sk)
	case 4:
		for i, d := range ms.Dimensions {
			if d != 1 && d != want[i] {
				fail("mask %s: a rank-4 mask must broadcast to the scores [batch, heads, seq_q, seq_k] = %v (each dimension 1 or equal)", ms, want)
			}
		}
	default:
		fail("mask %s: allowed are [batch, seq_k] = [%d %d] or rank 4 broadcastable to %v", ms, B, Sk, want)
	}
	switch {
	case ms.DType == dtypes.Bool:
	case ms.DType.IsFloat():
		if ms.DType != qs.DType {
			mask = graph.ConvertDType(mask, qs.DType)
		}
	default:
		fail("mask %s: the dtype must be Bool (true = attend) or a float (added to the scores)", ms)
	}
	return scale, mask
}
