package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/quant"
)

// torchFunctions lowers the call_function targets of torch functions and
// operators.
func torchFunctions() map[string]Lowering {
	return map[string]Lowering{
		"add":                          binary("add", nn.Broadcasting(graph.Add)),
		"sub":                          binary("sub", nn.Broadcasting(graph.Sub)),
		"mul":                          binary("mul", nn.Broadcasting(graph.Mul)),
		"truediv":                      binary("truediv", nn.Broadcasting(graph.Div)),
		"div":                          binary("div", nn.Broadcasting(graph.Div)),
		"matmul":                       tensors2("matmul", graph.MatMul),
		"getitem":                      getitem,
		"ones":                         filled(1),
		"zeros":                        filled(0),
		"arange":                       arange,
		"scaled_dot_product_attention": sdpaOp,
		"softmax":                      softmax,
		"relu":                         unary("relu", nn.ReLUOp),
		"leaky_relu":                   leakyReLU,
		"tanh":                         unary("tanh", graph.Tanh),
		"gelu":                         unary("gelu", nn.GELUOp),
		"sigmoid":                      unary("sigmoid", graph.Sigmoid),
		"erf":                          unary("erf", graph.Erf),
		"exp":                          unary("exp", graph.Exp),
		"sqrt":                         unary("sqrt", graph.Sqrt),
		"neg":                          unary("neg", graph.Neg),
		"flatten":                      flatten,
		"unsqueeze":                    unsqueeze,
		"transpose":                    transpose,
		"dropout":                      dropoutFn,
		"linear":                       linearFn,
	}
}

// tensorMethods lowers the call_method targets of tensor methods; args[0]
// is self.
func tensorMethods() map[string]Lowering {
	return map[string]Lowering{
		"size":       size,
		"view":       view,
		"reshape":    view,
		"permute":    permute,
		"transpose":  transpose,
		"contiguous": unary("contiguous", func(x *graph.Node) *graph.Node { return x }),
		"unsqueeze":  unsqueeze,
		"relu":       unary("relu", nn.ReLUOp),
		"leaky_relu": leakyReLU,
		"tanh":       unary("tanh", graph.Tanh),
		"softmax":    softmax,
		"flatten":    flatten,
		"float":      unary("float", func(x *graph.Node) *graph.Node { return graph.ConvertDType(x, dtypes.Float32) }),
		"to":         to,
	}
}

func node(name string, args []any, i int) (*graph.Node, error) {
	if i >= len(args) {
		return nil, fmt.Errorf("%s: missing argument %d", name, i)
	}
	n, ok := args[i].(*graph.Node)
	if !ok {
		return nil, fmt.Errorf("%s: argument %d is %T, want a tensor", name, i, args[i])
	}
	return n, nil
}

func intArg(name string, v any) (int, error) {
	if n, ok := quant.AsInt(v); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%s: want an integer, got %v (%T)", name, v, v)
}

func floatArg(name string, v any) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	}
	return 0, fmt.Errorf("%s: want a number, got %v (%T)", name, v, v)
}

// intsArg reads a shape: a tuple, or the remaining positional ints.
func intsArg(name string, args []any) ([]int, error) {
	if len(args) == 1 {
		if t, ok := args[0].([]any); ok {
			args = t
		}
	}
	out := make([]int, len(args))
	for i, a := range args {
		v, err := intArg(name, a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func normAxis(axis, rank int) int {
	if axis < 0 {
		return axis + rank
	}
	return axis
}

func unary(name string, f func(*graph.Node) *graph.Node) Lowering {
	return func(_ *nn.Call, args []any, _ map[string]any) (any, error) {
		x, err := node(name, args, 0)
		if err != nil {
			return nil, err
		}
		return f(x), nil
	}
}

func tensors2(name string, f func(a, b *graph.Node) *graph.Node) Lowering {
	return func(_ *nn.Call, args []any, _ map[string]any) (any, error) {
		a, err := node(name, args, 0)
		if err != nil {
			return nil, err
		}
		b, err := node(name, args, 1)
		if err != nil {
			return nil, err
		}
		return f(a, b), nil
	}
}

// binary lowers an arithmetic operator on tensors and Python numbers; add
// on two tuples concatenates them (shape arithmetic such as size()[:-1] +
// (heads, head_dim)).
func binary(name string, f func(a, b *graph.Node) *graph.Node) Lowering {
	return func(c *nn.Call, args []any, _ map[string]any) (any, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("%s: want 2 arguments, got %d", name, len(args))
		}
		a, b := args[0], args[1]
		an, aIsNode := a.(*graph.Node)
		bn, bIsNode := b.(*graph.Node)
		switch {
		case aIsNode && bIsNode:
			return f(an, bn), nil
		case aIsNode:
			s, err := floatArg(name, b)
			if err != nil {
				return nil, err
			}
			return f(an, graph.Scalar(c.Graph, an.DType(), s)), nil
		case bIsNode:
			s, err := floatArg(name, a)
			if err != nil {
				return nil, err
			}
			return f(graph.Scalar(c.Graph, bn.DType(), s), bn), nil
		}
		if ta, ok := a.([]any); ok && name == "add" {
			tb, ok := b.([]any)
			if !ok {
				return nil, fmt.Errorf("add: cannot add a tuple and %T", b)
			}
			return append(append([]any{}, ta...), tb...), nil
		}
		return scalarArith(name, a, b)
	}
}

func scalarArith(name string, a, b any) (any, error) {
	ai, aInt := a.(int)
	bi, bInt := b.(int)
	if aInt && bInt {
		switch name {
		case "add":
			return ai + bi, nil
		case "sub":
			return ai - bi, nil
		case "mul":
			return ai * bi, nil
		}
	}
	x, err := floatArg(name, a)
	if err != nil {
		return nil, err
	}
	y, err := floatArg(name, b)
	if err != nil {
		return nil, err
	}
	switch name {
	case "add":
		return x + y, nil
	case "sub":
		return x - y, nil
	case "mul":
		return x * y, nil
	default:
		return x / y, nil
	}
}

// getitem indexes a tuple (an int or a slice) or a tensor (a tuple of ints,
// slices and None per axis).
func getitem(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("getitem: want 2 arguments, got %d", len(args))
	}
	switch x := args[0].(type) {
	case []any:
		switch idx := args[1].(type) {
		case int:
			i := normAxis(idx, len(x))
			if i < 0 || i >= len(x) {
				return nil, fmt.Errorf("getitem: index %d out of range for a tuple of %d", idx, len(x))
			}
			return x[i], nil
		case ir.Slice:
			lo, hi := sliceBounds(idx, len(x))
			return append([]any{}, x[lo:hi]...), nil
		}
		return nil, fmt.Errorf("getitem: cannot index a tuple with %T", args[1])
	case *graph.Node:
		idx, ok := args[1].([]any)
		if !ok {
			idx = []any{args[1]}
		}
		dims := x.Shape().Dimensions
		if len(idx) > len(dims) {
			return nil, fmt.Errorf("getitem: %d indices for a tensor of rank %d", len(idx), len(dims))
		}
		specs := make([]graph.SliceAxisSpec, len(dims))
		var squeeze []int
		for axis := range dims {
			if axis >= len(idx) {
				specs[axis] = graph.AxisRange()
				continue
			}
			switch v := idx[axis].(type) {
			case int:
				i := normAxis(v, dims[axis])
				specs[axis] = graph.AxisRange(i, i+1)
				squeeze = append(squeeze, axis)
			case ir.Slice:
				if v.Step != nil && *v.Step != 1 {
					return nil, fmt.Errorf("getitem: slice steps other than 1 are not supported")
				}
				lo, hi := sliceBounds(v, dims[axis])
				specs[axis] = graph.AxisRange(lo, hi)
			default:
				return nil, fmt.Errorf("getitem: index %v (%T) on axis %d: want an int or a slice", v, v, axis)
			}
		}
		out := graph.Slice(x, specs...)
		if len(squeeze) > 0 {
			out = graph.Squeeze(out, squeeze...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("getitem: cannot index a %T", args[0])
}

func sliceBounds(s ir.Slice, n int) (lo, hi int) {
	lo, hi = 0, n
	if s.Start != nil {
		lo = clamp(normAxis(*s.Start, n), 0, n)
	}
	if s.Stop != nil {
		hi = clamp(normAxis(*s.Stop, n), 0, n)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// dtypeKw reads a dtype keyword ("float32", "int32", "int64"); def when absent.
func dtypeKw(kwargs map[string]any, def dtypes.DType) (dtypes.DType, error) {
	v, ok := kwargs["dtype"]
	if !ok || v == nil {
		return def, nil
	}
	s, _ := v.(string)
	switch s {
	case "float32", "float":
		return dtypes.Float32, nil
	case "int32", "int64", "long", "int":
		// Integer tensors are int32 on every gomase backend.
		return dtypes.Int32, nil
	case "bool":
		return dtypes.Bool, nil
	}
	return 0, fmt.Errorf("unknown dtype %v (allowed: float32, int32, int64, bool)", v)
}

func filled(value float64) Lowering {
	return func(c *nn.Call, args []any, kwargs map[string]any) (any, error) {
		dims, err := intsArg("ones/zeros", args)
		if err != nil {
			return nil, err
		}
		dt, err := dtypeKw(kwargs, dtypes.Float32)
		if err != nil {
			return nil, err
		}
		if value == 0 {
			return graph.Zeros(c.Graph, shapes.Make(dt, dims...)), nil
		}
		return graph.Ones(c.Graph, shapes.Make(dt, dims...)), nil
	}
}

func arange(c *nn.Call, args []any, kwargs map[string]any) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("arange: want 1 argument (end), got %d", len(args))
	}
	end, err := intArg("arange", args[0])
	if err != nil {
		return nil, err
	}
	dt, err := dtypeKw(kwargs, dtypes.Int32)
	if err != nil {
		return nil, err
	}
	return graph.Iota(c.Graph, shapes.Make(dt, end), 0), nil
}

// sdpaOp is torch's F.scaled_dot_product_attention: softmax(q kᵀ·scale +
// mask) v, with dropout on the weights in train mode.
func sdpaOp(c *nn.Call, args []any, kwargs map[string]any) (any, error) {
	q, err := node("scaled_dot_product_attention", args, 0)
	if err != nil {
		return nil, err
	}
	k, err := node("scaled_dot_product_attention", args, 1)
	if err != nil {
		return nil, err
	}
	v, err := node("scaled_dot_product_attention", args, 2)
	if err != nil {
		return nil, err
	}
	headDim := q.Shape().Dimensions[q.Rank()-1]
	scale := 1 / math.Sqrt(float64(headDim))
	if s, ok := kwargs["scale"]; ok && s != nil {
		if scale, err = floatArg("scale", s); err != nil {
			return nil, err
		}
	}
	var mask *graph.Node
	if m, ok := kwargs["attn_mask"]; ok && m != nil {
		if mask, ok = m.(*graph.Node); !ok {
			return nil, fmt.Errorf("scaled_dot_product_attention: attn_mask is %T, want a tensor", m)
		}
	}
	if causal, _ := kwargs["is_causal"].(bool); causal {
		return nil, fmt.Errorf("scaled_dot_product_attention: is_causal=True is not supported yet")
	}
	rate := 0.0
	if p, ok := kwargs["dropout_p"]; ok && c.Training {
		if rate, err = floatArg("dropout_p", p); err != nil {
			return nil, err
		}
	}
	return attention(c, q, k, v, mask, scale, rate), nil
}

// attention computes sdpa's softmax(q kᵀ·scale + mask) v with dropout rate
// on the weights (train mode). For 4-D q, k, v [batch, heads, seq, dim] and
// an additive float mask it uses matmuls with the heads as a batch axis
// (no transposes: the Go backend's matmul takes them as they are), the
// fused softmax and a hand-written gradient (nn.CustomGradient) that
// transposes only the two [seq, seq] operands its matmuls need; otherwise,
// or with GOMLX_FUSION=0, the decomposed GoMLX ops.
func attention(c *nn.Call, q, k, v, mask *graph.Node, scale, rate float64) *graph.Node {
	var kept *graph.Node // dropout: 1/(1-rate) where the weights are kept, 0 elsewhere; drawn once
	dropout := func(w *graph.Node) *graph.Node {
		if rate <= 0 {
			return w
		}
		if kept == nil {
			u := c.Random(w.Shape().Dimensions...)
			kept = nn.DropoutMask(graph.GreaterOrEqual(u, graph.Scalar(w.Graph(), u.DType(), rate)), w.DType(), rate)
		}
		return graph.Mul(w, kept)
	}
	slow := func() *graph.Node {
		scores := graph.MulScalar(graph.MatMul(q, graph.Transpose(k, k.Rank()-2, k.Rank()-1)), scale)
		if mask != nil {
			scores = nn.Broadcasting(graph.Add)(scores, mask)
		}
		return graph.MatMul(dropout(graph.Softmax(scores, scores.Rank()-1)), v)
	}
	if rate >= 1 || q.Rank() != 4 || k.Rank() != 4 || v.Rank() != 4 || !q.DType().IsFloat() ||
		k.DType() != q.DType() || v.DType() != q.DType() || (mask != nil && (mask.DType() != q.DType() || mask.Rank() > 4)) {
		return slow()
	}
	qd, kd, vd := q.Shape().Dimensions, k.Shape().Dimensions, v.Shape().Dimensions
	if qd[0] != kd[0] || qd[1] != kd[1] || qd[3] != kd[3] || vd[0] != kd[0] || vd[1] != kd[1] || vd[2] != kd[2] {
		return slow()
	}
	scoreDims := []int{qd[0], qd[1], qd[2], kd[2]}
	var fullMask *graph.Node // the mask broadcast to the scores' shape
	if mask != nil {
		if fullMask = broadcastMask(mask, scoreDims); fullMask == nil {
			return slow()
		}
	}
	batch := []int{0, 1}
	// The scale multiplies q when that is smaller than the scores.
	scaleQ := qd[3] < kd[2]
	var qs, weights, dropped *graph.Node // q (scaled if scaleQ), softmax output, and after dropout
	fast := func() *graph.Node {
		qs = q
		if scaleQ {
			qs = graph.MulScalar(q, scale)
		}
		scores := graph.DotGeneral(qs, []int{3}, batch, k, []int{3}, batch)
		if !scaleQ {
			scores = graph.MulScalar(scores, scale)
		}
		if fullMask != nil {
			scores = graph.Add(scores, fullMask)
		}
		weights = graph.BackendFusedSoftmax(scores, 3)
		dropped = weights
		if rate > 0 {
			dropped = dropout(weights)
		}
		return graph.DotGeneral(dropped, []int{3}, batch, v, []int{2}, batch)
	}
	inputs := []*graph.Node{q, k, v}
	if mask != nil {
		inputs = append(inputs, mask)
	}
	outShape := shapes.Make(q.DType(), qd[0], qd[1], qd[2], vd[3])
	return nn.CustomGradient(inputs, outShape, fast, slow, func(_, dOut *graph.Node) []*graph.Node {
		// With S = q·kᵀ·scale + mask, P = softmax(S), O = P·v (dropout on P
		// aside): dv = Pᵀ·dO, dP = dO·vᵀ, dS = softmax'(dP), dq = dS·k·scale,
		// dk = dSᵀ·q·scale, dmask = dS (summed over its broadcast axes).
		dv := graph.DotGeneral(graph.Transpose(dropped, 2, 3), []int{3}, batch, dOut, []int{2}, batch)
		// softmax'(dP·mask) needs (dP·mask)·P = dP·(mask·P) = dP·dropped.
		dp := graph.DotGeneral(dOut, []int{3}, batch, v, []int{3}, batch)
		dScores := nn.SoftmaxGradFromProduct(weights, graph.Mul(dp, dropped))
		var dq, dk *graph.Node
		if scaleQ {
			dq = graph.MulScalar(graph.DotGeneral(dScores, []int{3}, batch, k, []int{2}, batch), scale)
			dk = graph.DotGeneral(graph.Transpose(dScores, 2, 3), []int{3}, batch, qs, []int{2}, batch)
		} else {
			ds := graph.MulScalar(dScores, scale)
			dq = graph.DotGeneral(ds, []int{3}, batch, k, []int{2}, batch)
			dk = graph.DotGeneral(graph.Transpose(ds, 2, 3), []int{3}, batch, q, []int{2}, batch)
		}
		grads := []*graph.Node{dq, dk, dv}
		if mask != nil {
			grads = append(grads, reduceToShape(dScores, mask.Shape()))
		}
		return grads
	})
}

// broadcastMask expands an additive mask (rank ≤ 4, broadcastable) to the
// scores' dimensions, or returns nil if it cannot. The broadcast is
// explicit (and goes through a lower rank, so the Go backend does not fold
// it back into the add): its implicit broadcasting in binary ops is slow,
// and the layers of a model share the one expanded mask.
func broadcastMask(mask *graph.Node, dims []int) *graph.Node {
	md := mask.Shape().Dimensions
	if slices.Equal(md, dims) {
		return mask
	}
	offset := len(dims) - len(md)
	var kept, expanded []int // kept: mask dims of the axes it has; expanded: the axes it is broadcast on
	for axis := range dims {
		i := axis - offset
		switch {
		case i >= 0 && md[i] == dims[axis]:
			kept = append(kept, md[i])
		case i < 0 || md[i] == 1:
			expanded = append(expanded, axis)
		default:
			return nil
		}
	}
	return graph.ExpandAndBroadcast(graph.Reshape(mask, kept...), dims, expanded)
}

// reduceToShape sums x over the axes a broadcast to x's shape expanded
// from shape (right-aligned, as PyTorch), and reshapes to shape.
func reduceToShape(x *graph.Node, shape shapes.Shape) *graph.Node {
	dims := x.Shape().Dimensions
	offset := len(dims) - shape.Rank()
	var axes []int
	for axis := range dims {
		if i := axis - offset; i < 0 || (shape.Dimensions[i] == 1 && dims[axis] != 1) {
			axes = append(axes, axis)
		}
	}
	if len(axes) > 0 {
		x = graph.ReduceSum(x, axes...)
	}
	return graph.Reshape(x, shape.Dimensions...)
}

// leakyReLU is torch's F.leaky_relu(input, negative_slope=0.01,
// inplace=False) and the tensor method x.leaky_relu(negative_slope): the
// slope comes positionally or by keyword; inplace changes nothing here.
func leakyReLU(_ *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("leaky_relu", args, 0)
	if err != nil {
		return nil, err
	}
	slope := nn.DefaultNegativeSlope
	v, ok := kwargs["negative_slope"]
	if len(args) > 1 {
		if ok {
			return nil, fmt.Errorf("leaky_relu: negative_slope given both positionally and by keyword")
		}
		v, ok = args[1], true
	}
	if ok {
		if slope, err = floatArg("leaky_relu: negative_slope", v); err != nil {
			return nil, err
		}
	}
	for k := range kwargs {
		if k != "negative_slope" && k != "inplace" {
			return nil, fmt.Errorf("leaky_relu: unknown keyword %q (allowed: negative_slope, inplace)", k)
		}
	}
	return nn.LeakyReLUOp(x, slope), nil
}

// linearFn is torch's F.linear(input, weight, bias=None): x Wᵀ + b with W
// [out, in].
func linearFn(_ *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("linear", args, 0)
	if err != nil {
		return nil, err
	}
	w, err := node("linear", args, 1)
	if err != nil {
		return nil, err
	}
	bias, ok := kwargs["bias"]
	if len(args) > 2 {
		bias, ok = args[2], true
	}
	var b *graph.Node
	if ok && bias != nil {
		if b, ok = bias.(*graph.Node); !ok {
			return nil, fmt.Errorf("linear: bias is %T, want a tensor or None", bias)
		}
	}
	if w.Rank() != 2 || x.Rank() == 0 || x.Shape().Dimensions[x.Rank()-1] != w.Shape().Dimensions[1] ||
		(b != nil && (b.Rank() != 1 || b.Shape().Dimensions[0] != w.Shape().Dimensions[0])) {
		bs := "None"
		if b != nil {
			bs = b.Shape().String()
		}
		return nil, fmt.Errorf("linear: input %s, weight %s, bias %s (allowed: input [..., in], weight [out, in], bias [out] or None)", x.Shape(), w.Shape(), bs)
	}
	return nn.LinearBiasOp(x, w, b), nil
}

func dropoutFn(c *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("dropout", args, 0)
	if err != nil {
		return nil, err
	}
	p := 0.5
	if v, ok := kwargs["p"]; ok {
		if p, err = floatArg("dropout p", v); err != nil {
			return nil, err
		}
	}
	training := c.Training
	if v, ok := kwargs["training"].(bool); ok {
		training = training && v
	}
	if !training {
		return x, nil
	}
	return nn.DropoutOp(c, x, p), nil
}

func softmax(_ *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("softmax", args, 0)
	if err != nil {
		return nil, err
	}
	dim := -1
	if v, ok := kwargs["dim"]; ok {
		if dim, err = intArg("softmax dim", v); err != nil {
			return nil, err
		}
	} else if len(args) > 1 {
		if dim, err = intArg("softmax dim", args[1]); err != nil {
			return nil, err
		}
	}
	return nn.SoftmaxOp(x, dim), nil
}

func flatten(_ *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("flatten", args, 0)
	if err != nil {
		return nil, err
	}
	start := 0
	if v, ok := kwargs["start_dim"]; ok {
		if start, err = intArg("flatten start_dim", v); err != nil {
			return nil, err
		}
	} else if len(args) > 1 {
		if start, err = intArg("flatten start_dim", args[1]); err != nil {
			return nil, err
		}
	}
	d := x.Shape().Dimensions
	start = normAxis(start, len(d))
	rest := 1
	for _, v := range d[start:] {
		rest *= v
	}
	return graph.Reshape(x, append(append([]int{}, d[:start]...), rest)...), nil
}

func unsqueeze(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := node("unsqueeze", args, 0)
	if err != nil {
		return nil, err
	}
	if len(args) != 2 {
		return nil, fmt.Errorf("unsqueeze: want (tensor, dim)")
	}
	dim, err := intArg("unsqueeze dim", args[1])
	if err != nil {
		return nil, err
	}
	if dim < 0 {
		dim += x.Rank() + 1
	}
	return graph.InsertAxes(x, dim), nil
}

func transpose(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := node("transpose", args, 0)
	if err != nil {
		return nil, err
	}
	if len(args) != 3 {
		return nil, fmt.Errorf("transpose: want (tensor, dim0, dim1)")
	}
	a, err := intArg("transpose dim0", args[1])
	if err != nil {
		return nil, err
	}
	b, err := intArg("transpose dim1", args[2])
	if err != nil {
		return nil, err
	}
	return graph.Transpose(x, normAxis(a, x.Rank()), normAxis(b, x.Rank())), nil
}

func size(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := node("size", args, 0)
	if err != nil {
		return nil, err
	}
	d := x.Shape().Dimensions
	if len(args) > 1 {
		i, err := intArg("size dim", args[1])
		if err != nil {
			return nil, err
		}
		i = normAxis(i, len(d))
		if i < 0 || i >= len(d) {
			return nil, fmt.Errorf("size: dim %d out of range for rank %d", i, len(d))
		}
		return d[i], nil
	}
	out := make([]any, len(d))
	for i, v := range d {
		out[i] = v
	}
	return out, nil
}

// view reshapes; one dimension may be -1 (inferred).
func view(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := node("view", args, 0)
	if err != nil {
		return nil, err
	}
	dims, err := intsArg("view", args[1:])
	if err != nil {
		return nil, err
	}
	total := x.Shape().Size()
	known, infer := 1, -1
	for i, d := range dims {
		if d == -1 {
			if infer >= 0 {
				return nil, fmt.Errorf("view: only one dimension can be -1, got %v", dims)
			}
			infer = i
			continue
		}
		known *= d
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fmt.Errorf("view: shape %v is invalid for input of size %d", dims, total)
		}
		dims[infer] = total / known
	}
	if n := shapes.Make(x.DType(), dims...).Size(); n != total {
		return nil, fmt.Errorf("view: shape %v is invalid for input of size %d", dims, total)
	}
	return graph.Reshape(x, dims...), nil
}

func permute(_ *nn.Call, args []any, _ map[string]any) (any, error) {
	x, err := node("permute", args, 0)
	if err != nil {
		return nil, err
	}
	perm, err := intsArg("permute", args[1:])
	if err != nil {
		return nil, err
	}
	if len(perm) != x.Rank() {
		return nil, fmt.Errorf("permute: %d axes for a tensor of rank %d", len(perm), x.Rank())
	}
	return graph.TransposeAllDims(x, perm...), nil
}

func to(_ *nn.Call, args []any, kwargs map[string]any) (any, error) {
	x, err := node("to", args, 0)
	if err != nil {
		return nil, err
	}
	if len(args) > 1 {
		kwargs = map[string]any{"dtype": args[1]}
	}
	dt, err := dtypeKw(kwargs, x.DType())
	if err != nil {
		return nil, err
	}
	return graph.ConvertDType(x, dt), nil
}
