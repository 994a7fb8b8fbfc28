// Package prune holds the pruning parts of a model: the weight mask (a
// parametrization), the activation-sparsifying pre-hook and the quantiles
// that choose their thresholds. Both register their kinds with nn, so a
// checkpoint restores them.
package prune

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"

	"github.com/gomase/gomase/mase/nn"
)

func init() {
	nn.RegisterHookKind(MaskKind, func() any { return &Mask{} })
	nn.RegisterHookKind(SparsifyInputKind, func() any { return &SparsifyInput{} })
}

// Kinds of the built-in parametrization and pre-hook.
const (
	// MaskKind is Mask's kind.
	MaskKind = "mask"
	// SparsifyInputKind is SparsifyInput's kind.
	SparsifyInputKind = "sparsify_input"
)

// Mask is the parametrization w ↦ mask ⊙ w, with the mask a buffer of the
// model (MASE's FakeSparseWeight): masked entries read as zero and get a
// zero gradient, so they stay zero through training whatever the stored
// values do.
type Mask struct {
	// Buffer is the dotted name of the mask buffer, of the parameter's
	// shape and dtype, holding 1 (keep) or 0 (prune): e.g.
	// "classifier.weight_mask".
	Buffer string `json:"buffer"`
}

// Kind implements Parametrization.
func (*Mask) Kind() string { return MaskKind }

// Apply implements Parametrization.
func (p *Mask) Apply(c *nn.Call, param string, w *graph.Node) (*graph.Node, error) {
	v, ok := c.Model.Buffer(p.Buffer)
	if !ok {
		return nil, fmt.Errorf("mask buffer %q does not exist in the model", p.Buffer)
	}
	if !v.Shape().Equal(w.Shape()) {
		return nil, fmt.Errorf("mask buffer %s is %s, but %s is %s", p.Buffer, v.Shape(), param, w.Shape())
	}
	return graph.Mul(w, v.NodeValue(c.Graph)), nil
}

// Activation sparsification methods of SparsifyInput.
const (
	// MethodRandom drops each input element with probability Sparsity.
	MethodRandom = "random"
	// MethodL1 keeps the input elements whose magnitude exceeds a
	// threshold.
	MethodL1 = "l1-norm"
)

// SparsifyInput is a forward pre-hook that zeroes elements of a leaf's
// single input on every forward (MASE's activation pruning hook):
//
//   - "l1-norm" without Threshold: x ⊙ (|x| > t) with t the Sparsity
//     quantile of |x| over the whole input tensor, recomputed from the
//     live input (torch.quantile's linear interpolation, computed in the
//     graph by sorting |x|);
//   - "l1-norm" with Threshold: the same with the fixed t (global scope);
//   - "random": x ⊙ (u ≥ Sparsity), u uniform in [0,1), a fresh draw from
//     the model store's random generator on every forward, in eval mode
//     too (as MASE does).
//
// Kept elements are not rescaled. A module called with more than one
// positional argument is an error, as in MASE.
type SparsifyInput struct {
	Method   string  `json:"method"`
	Sparsity float64 `json:"sparsity"`
	// Threshold, when set, replaces the per-forward quantile of l1-norm.
	Threshold *float64 `json:"threshold,omitempty"`
}

// Kind implements ForwardPreHook.
func (*SparsifyInput) Kind() string { return SparsifyInputKind }

// Apply implements ForwardPreHook.
func (h *SparsifyInput) Apply(c *nn.Call, args []any, kwargs map[string]any) ([]any, map[string]any, error) {
	if len(args) != 1 {
		return nil, nil, fmt.Errorf("sparsify_input: the module takes %d positional arguments; the hook allows exactly one", len(args))
	}
	x, ok := args[0].(*graph.Node)
	if !ok {
		return nil, nil, fmt.Errorf("sparsify_input: the argument is %T, want a tensor", args[0])
	}
	if !x.DType().IsFloat() {
		return nil, nil, fmt.Errorf("sparsify_input: the input is %s, want a float tensor", x.DType())
	}
	if h.Sparsity < 0 || h.Sparsity > 1 {
		return nil, nil, fmt.Errorf("sparsify_input: sparsity %v, want a value in [0, 1]", h.Sparsity)
	}
	var keep *graph.Node
	switch h.Method {
	case MethodL1:
		mag := graph.StopGradient(graph.Abs(x))
		var t *graph.Node
		if h.Threshold != nil {
			t = graph.Scalar(x.Graph(), x.DType(), *h.Threshold)
		} else {
			t = QuantileGraph(mag, h.Sparsity)
		}
		keep = graph.GreaterThan(mag, t)
	case MethodRandom:
		u := c.Scope.Store().RandomUniform(c.Graph, shapes.Make(dtypes.Float32, x.Shape().Dimensions...))
		keep = graph.GreaterOrEqual(u, graph.Scalar(c.Graph, dtypes.Float32, h.Sparsity))
	default:
		return nil, nil, fmt.Errorf("sparsify_input: unknown method %q (allowed: %s, %s)", h.Method, MethodRandom, MethodL1)
	}
	return []any{graph.Where(keep, x, graph.ZerosLike(x))}, kwargs, nil
}

// QuantileGraph is torch.quantile(x.flatten(), q) with linear
// interpolation, in the graph: pos = q·(n−1) (computed in float32, as
// torch does for float32 inputs) and the result lerps between the order
// statistics at ⌊pos⌋ and ⌈pos⌉ with torch.lerp's formula. The order
// statistics are exact (see OrderStatistic); values are compared as
// float32. It returns a scalar of x's dtype; it has no gradient.
func QuantileGraph(x *graph.Node, q float64) *graph.Node {
	n := x.Shape().Size()
	if n == 0 {
		return graph.ScalarZero(x.Graph(), x.DType())
	}
	v := graph.StopGradient(x)
	if v.DType() != dtypes.Float32 {
		v = graph.ConvertDType(v, dtypes.Float32)
	}
	v = graph.Reshape(v, n)
	lo, hi, w := QuantilePos(n, q)
	vlo := OrderStatistic(v, lo)
	vhi := vlo
	if hi != lo {
		// The next order statistic: vlo again when it is repeated, else
		// the smallest element above it.
		g := v.Graph()
		atMost := graph.ReduceSum(graph.ConvertDType(graph.LessOrEqual(v, vlo), dtypes.Int32))
		above := graph.ReduceMin(graph.Where(graph.GreaterThan(v, vlo), v, graph.Infinity(g, dtypes.Float32, 1)))
		vhi = graph.Where(graph.GreaterOrEqual(atMost, graph.Scalar(g, dtypes.Int32, int32(hi+1))), vlo, above)
	}
	diff := graph.Sub(vhi, vlo)
	var t *graph.Node
	if w < 0.5 {
		t = graph.Add(vlo, graph.MulScalar(diff, float64(w)))
	} else {
		t = graph.Sub(vhi, graph.MulScalar(diff, float64(1-w)))
	}
	if x.DType() != dtypes.Float32 {
		t = graph.ConvertDType(t, x.DType())
	}
	return t
}

// OrderStatistic returns the element of the float32 tensor x (any shape,
// flattened) at rank r of its ascending order (0 is the smallest), as a
// scalar. r must be in [0, n).
//
// It does not sort (GoMLX's Sort calls a compiled comparator per
// comparison on the Go backend, far too slow for activations). Each
// float's bits are mapped to a 32-bit key with the same order, and a radix
// select finds the key digit by digit (11, 11 and 10 bits): a histogram
// of the digit over the elements still in play (a scatter-add), then the
// bucket that holds rank r (a binary search over the histogram's prefix
// sums). The result is exact; the cost is about 16 passes over x, three of
// them scatters. NaNs order after +Inf; −0 before +0.
func OrderStatistic(x *graph.Node, r int) *graph.Node {
	g := x.Graph()
	n := x.Shape().Size()
	i32 := func(v int64) *graph.Node { return graph.Scalar(g, dtypes.Int32, int32(v)) }
	bits := graph.Bitcast(graph.Reshape(x, n), dtypes.Int32)
	// Signed order key: negative floats (larger magnitude, larger bits)
	// get their magnitude bits flipped; then flipping the sign bit makes
	// the unsigned order of the bit pattern the float order.
	flip := i32(math.MaxInt32)
	neg := graph.LessThan(bits, graph.ScalarZero(g, dtypes.Int32))
	u := graph.BitwiseXor(graph.Where(neg, graph.BitwiseXor(bits, flip), bits), i32(math.MinInt32))

	need := i32(int64(r) + 1) // rank (1-based) within the elements in play
	var inPlay *graph.Node    // nil: every element
	var result *graph.Node
	for _, level := range []struct{ shift, width int }{{21, 11}, {10, 11}, {0, 10}} {
		digit := graph.BitwiseAnd(graph.BitwiseShiftRightLogicalScalar(u, level.shift), i32(1<<level.width-1))
		var weights *graph.Node
		if inPlay == nil {
			weights = graph.OnesLike(digit)
		} else {
			weights = graph.ConvertDType(inPlay, dtypes.Int32)
		}
		buckets := 1 << level.width
		hist := graph.Scatter(graph.Reshape(digit, n, 1), weights, shapes.Make(dtypes.Int32, buckets), false, false)
		var b *graph.Node
		b, need = selectBucket(hist, need)
		if result == nil {
			result = graph.BitwiseShiftLeftScalar(b, level.shift)
		} else {
			result = graph.BitwiseOr(result, graph.BitwiseShiftLeftScalar(b, level.shift))
		}
		here := graph.Equal(digit, b)
		if inPlay == nil {
			inPlay = here
		} else {
			inPlay = graph.LogicalAnd(inPlay, here)
		}
	}
	key := graph.BitwiseXor(result, i32(math.MinInt32))
	key = graph.Where(graph.LessThan(key, graph.ScalarZero(g, dtypes.Int32)), graph.BitwiseXor(key, flip), key)
	return graph.Bitcast(key, dtypes.Float32)
}

// selectBucket returns the first bucket b of the int32 histogram hist whose
// prefix sum hist[0] + … + hist[b] reaches need, and need minus the count
// before b: the rank within bucket b. A binary search over b.
func selectBucket(hist, need *graph.Node) (b, rest *graph.Node) {
	g := hist.Graph()
	size := hist.Shape().Dimensions[0]
	iota := graph.Iota(g, shapes.Make(dtypes.Int32, size), 0)
	zeros := graph.ZerosLike(hist)
	prefix := func(at *graph.Node) *graph.Node {
		return graph.ReduceSum(graph.Where(graph.LessOrEqual(iota, at), hist, zeros))
	}
	lo, hi := graph.ScalarZero(g, dtypes.Int32), graph.Scalar(g, dtypes.Int32, int32(size-1))
	one := graph.ScalarOne(g, dtypes.Int32)
	for span := size; span > 1; span = (span + 1) / 2 {
		mid := graph.Div(graph.Add(lo, hi), graph.Scalar(g, dtypes.Int32, 2)) // lo, hi ≥ 0
		enough := graph.GreaterOrEqual(prefix(mid), need)
		hi = graph.Where(enough, mid, hi)
		lo = graph.Where(enough, lo, graph.Add(mid, one))
	}
	return hi, graph.Sub(need, prefix(graph.Sub(hi, one))) // prefix(−1) = 0
}

// QuantilePos returns the interpolation points of torch.quantile for n
// values at q: the ranks ⌊pos⌋ and ⌈pos⌉ and the weight pos−⌊pos⌋, where
// pos = q·(n−1) in float32.
func QuantilePos(n int, q float64) (lo, hi int, w float32) {
	pos := float32(q) * float32(n-1)
	lo = int(pos)
	hi = lo
	if float32(lo) < pos {
		hi = lo + 1
	}
	if hi > n-1 {
		hi = n - 1
	}
	return lo, hi, pos - float32(lo)
}

// Quantile is torch.quantile(x, q) with linear interpolation on host
// values: QuantileGraph's arithmetic in float32. x is not modified; it
// must not be empty.
func Quantile(x []float32, q float64) float32 {
	s := slices.Clone(x)
	slices.Sort(s)
	lo, hi, w := QuantilePos(len(s), q)
	return Lerp(s[lo], s[hi], w)
}

// Lerp is torch.lerp(a, b, w) in float32: a + w·(b−a) for w < 0.5,
// b − (b−a)·(1−w) otherwise.
func Lerp(a, b, w float32) float32 {
	// The conversions round each product to float32, as torch does, and
	// keep the compiler from fusing it into the sum.
	if w < 0.5 {
		return a + float32(w*(b-a))
	}
	return b - float32((b-a)*(1-w))
}
