package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
)

// Container is a module whose forward is traced by its model (it is not a
// leaf): BertModel, BertLayer, ModuleList, ...
type Container struct {
	Type string  // class name printed in the module tree
	Kids []Named // submodules in order
}

// TypeName implements Module.
func (c *Container) TypeName() string { return c.Type }

// ExtraRepr implements Module.
func (c *Container) ExtraRepr() string { return "" }

// Children implements Module.
func (c *Container) Children() []Named { return c.Kids }

// Params implements Module: containers own no parameters.
func (c *Container) Params() []ParamSpec { return nil }

// SetChild replaces the submodule called name (ChildSetter).
func (c *Container) SetChild(name string, mod Module) error {
	for i, k := range c.Kids {
		if k.Name == name {
			c.Kids[i].Module = mod
			return nil
		}
	}
	return fmt.Errorf("%s has no child %q", c.Type, name)
}

// Child returns the submodule called name, or nil.
func (c *Container) Child(name string) Module {
	for _, k := range c.Kids {
		if k.Name == name {
			return k.Module
		}
	}
	return nil
}

// noChildren is embedded by leaves.
type noChildren struct{}

// Children implements Module: leaves have none.
func (noChildren) Children() []Named { return nil }

// TensorArg returns argument i of a leaf's Forward as a graph node, or an
// error naming the module.
func TensorArg(mod string, args []any, i int) (*graph.Node, error) {
	if i >= len(args) {
		return nil, fmt.Errorf("%s: want at least %d tensor arguments, got %d", mod, i+1, len(args))
	}
	n, ok := args[i].(*graph.Node)
	if !ok {
		return nil, fmt.Errorf("%s: argument %d is %T, want a tensor", mod, i, args[i])
	}
	return n, nil
}

// Linear is y = x Wᵀ + b with W of shape [out_features, in_features], as
// torch.nn.Linear.
type Linear struct {
	noChildren
	InFeatures, OutFeatures int
	Bias                    bool
	// WeightInit and BiasInit default to PyTorch's U(±1/sqrt(in)). They
	// are not part of a module's serialised configuration.
	WeightInit, BiasInit Init `json:"-"`
}

// NewLinear returns a Linear with PyTorch's default initialisation.
func NewLinear(in, out int, bias bool) *Linear {
	return &Linear{InFeatures: in, OutFeatures: out, Bias: bias}
}

// TypeName implements Module.
func (l *Linear) TypeName() string { return "Linear" }

// ExtraRepr implements Module.
func (l *Linear) ExtraRepr() string {
	return fmt.Sprintf("in_features=%d, out_features=%d, bias=%s", l.InFeatures, l.OutFeatures, PyBool(l.Bias))
}

// Params implements Module.
func (l *Linear) Params() []ParamSpec {
	bound := 1 / math.Sqrt(float64(l.InFeatures))
	wi, bi := l.WeightInit, l.BiasInit
	if wi == nil {
		wi = Uniform(bound)
	}
	if bi == nil {
		bi = Uniform(bound)
	}
	ps := []ParamSpec{{Name: "weight", Shape: []int{l.OutFeatures, l.InFeatures}, Init: wi}}
	if l.Bias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{l.OutFeatures}, Init: bi})
	}
	return ps
}

// Forward implements Leaf.
func (l *Linear) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("Linear", args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) == 0 || d[len(d)-1] != l.InFeatures {
		return nil, fmt.Errorf("Linear %s: input shape %v, want last axis %d", c.Path, d, l.InFeatures)
	}
	w, b, err := c.WeightAndBias(l.Bias)
	if err != nil {
		return nil, err
	}
	return LinearBiasOp(x, w, b), nil
}

// LinearOp computes x Wᵀ for x [..., in] and W [out, in], contracting the
// last axis of x with W's second axis.
func LinearOp(x, w *graph.Node) *graph.Node { return LinearBiasOp(x, w, nil) }

// LinearBiasOp computes x Wᵀ + b (b may be nil) for x [..., in], W [out,
// in] and b [out], with the hand-written gradient of linearGrad (see
// CustomGradient; GOMLX_FUSION=0 selects plain GoMLX ops and gradients).
func LinearBiasOp(x, w, b *graph.Node) *graph.Node {
	slow := func() *graph.Node {
		y := graph.DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
		if b != nil {
			y = Broadcasting(graph.Add)(y, b)
		}
		return y
	}
	if x.Rank() == 0 || w.Rank() != 2 || (b != nil && b.Rank() != 1) || !x.DType().IsFloat() {
		return slow()
	}
	inputs := []*graph.Node{x, w}
	if b != nil {
		inputs = append(inputs, b)
	}
	outDims := append(append([]int{}, x.Shape().Dimensions[:x.Rank()-1]...), w.Shape().Dimensions[0])
	fast := func() *graph.Node {
		y := graph.DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
		if b == nil {
			return y
		}
		// The bias is broadcast to the output's rows by a matmul, then
		// added in place: faster than the backend's FusedDense (whose bias
		// loop takes a modulo per element) or an implicit broadcast.
		n := x.Shape().Size() / x.Shape().Dimensions[x.Rank()-1]
		return graph.Add(y, reshapeTo(broadcastRows(b, n), outDims...))
	}
	return CustomGradient(inputs, shapes.Make(x.DType(), outDims...), fast, slow, func(_, v *graph.Node) []*graph.Node {
		return linearGrad(x, w, b, v)
	})
}

// linearGrad is the gradient of x Wᵀ + b for the output adjoint v. GoMLX's
// generic DotGeneral gradient makes the Go backend transpose both operands
// of the weight gradient (its matmul wants the lhs contracting axis last)
// and adds identity transposes; here one operand is transposed (the smaller,
// or x, which the query/key/value projections share: the backend
// de-duplicates the transposes) and the bias gradient is a matmul with ones
// instead of a (slow, scalar) ReduceSum.
func linearGrad(x, w, b, v *graph.Node) []*graph.Node {
	in, out := w.Shape().Dimensions[1], w.Shape().Dimensions[0]
	n := x.Shape().Size() / in
	x2, v2 := reshapeTo(x, n, in), reshapeTo(v, n, out)
	dx := reshapeTo(graph.DotGeneral(v2, []int{1}, nil, w, []int{0}, nil), x.Shape().Dimensions...)
	var dw *graph.Node
	if in <= out {
		xt := graph.Transpose(x2, 0, 1)                               // [in, n]
		dwt := graph.DotGeneral(xt, []int{1}, nil, v2, []int{0}, nil) // [in, out]
		dw = graph.Transpose(dwt, 0, 1)                               // [out, in]
	} else {
		vt := graph.Transpose(v2, 0, 1)                             // [out, n]
		dw = graph.DotGeneral(vt, []int{1}, nil, x2, []int{0}, nil) // [out, in]
	}
	grads := []*graph.Node{dx, dw}
	if b != nil {
		grads = append(grads, reshapeTo(colSums(v2), out))
	}
	return grads
}

// Embedding looks up rows of a [num_embeddings, embedding_dim] table.
type Embedding struct {
	noChildren
	NumEmbeddings, EmbeddingDim int
	// PaddingIdx, when ≥ 0, is the row kept at zero at initialisation.
	PaddingIdx int
	Init       Init `json:"-"` // not part of the serialised configuration
}

// NewEmbedding returns an Embedding with N(0,1) init (PyTorch's default)
// and no padding index.
func NewEmbedding(num, dim int) *Embedding {
	return &Embedding{NumEmbeddings: num, EmbeddingDim: dim, PaddingIdx: -1}
}

// TypeName implements Module.
func (e *Embedding) TypeName() string { return "Embedding" }

// ExtraRepr implements Module.
func (e *Embedding) ExtraRepr() string {
	s := fmt.Sprintf("%d, %d", e.NumEmbeddings, e.EmbeddingDim)
	if e.PaddingIdx >= 0 {
		s += fmt.Sprintf(", padding_idx=%d", e.PaddingIdx)
	}
	return s
}

// Params implements Module.
func (e *Embedding) Params() []ParamSpec {
	init := e.Init
	if init == nil {
		init = Normal(1)
	}
	pad, dim := e.PaddingIdx, e.EmbeddingDim
	if pad >= 0 {
		base := init
		init = func(shape []int, rng *rand.Rand) []float32 {
			v := base(shape, rng)
			for j := 0; j < dim; j++ {
				v[pad*dim+j] = 0
			}
			return v
		}
	}
	return []ParamSpec{{Name: "weight", Shape: []int{e.NumEmbeddings, e.EmbeddingDim}, Init: init}}
}

// Forward implements Leaf: integer ids [...] → [..., dim].
func (e *Embedding) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	ids, err := TensorArg("Embedding", args, 0)
	if err != nil {
		return nil, err
	}
	if !ids.DType().IsInt() {
		return nil, fmt.Errorf("Embedding %s: ids are %s, want an integer type", c.Path, ids.DType())
	}
	w, err := c.Param("weight")
	if err != nil {
		return nil, err
	}
	return graph.Gather(w, graph.ExpandAxes(ids, -1)), nil
}

// LayerNorm normalises over the last axis with learnt weight and bias.
type LayerNorm struct {
	noChildren
	Dim int
	Eps float64
}

// TypeName implements Module.
func (l *LayerNorm) TypeName() string { return "LayerNorm" }

// ExtraRepr implements Module.
func (l *LayerNorm) ExtraRepr() string {
	return fmt.Sprintf("(%d,), eps=%s, elementwise_affine=True", l.Dim, formatFloat(l.Eps))
}

// Params implements Module.
func (l *LayerNorm) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Shape: []int{l.Dim}, Init: Ones}, {Name: "bias", Shape: []int{l.Dim}, Init: Zeros}}
}

// Forward implements Leaf.
func (l *LayerNorm) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("LayerNorm", args, 0)
	if err != nil {
		return nil, err
	}
	w, b, err := c.WeightAndBias(true)
	if err != nil {
		return nil, err
	}
	return LayerNormOp(x, w, b, l.Eps), nil
}

// LayerNormOp normalises x over its last axis and applies weight w and bias
// b (both [dim]). It runs the Go backend's fused layer norm with the
// gradient of layerNormGrad (see CustomGradient).
func LayerNormOp(x, w, b *graph.Node, eps float64) *graph.Node {
	axis := x.Rank() - 1
	slow := func() *graph.Node {
		mean := graph.ReduceAndKeep(x, graph.ReduceMean, axis)
		centred := graph.Sub(x, mean)
		variance := graph.ReduceAndKeep(graph.Square(centred), graph.ReduceMean, axis)
		norm := graph.Div(centred, graph.Sqrt(graph.AddScalar(variance, eps))) // Rsqrt has no gradient in GoMLX
		return Broadcasting(graph.Add)(Broadcasting(graph.Mul)(norm, w), b)
	}
	if x.Rank() == 0 || w.Rank() != 1 || b.Rank() != 1 || !x.DType().IsFloat() {
		return slow()
	}
	fast := func() *graph.Node { return graph.BackendFusedLayerNorm(x, []int{axis}, eps, w, b) }
	return CustomGradient([]*graph.Node{x, w, b}, x.Shape(), fast, slow, func(_, v *graph.Node) []*graph.Node {
		return layerNormGrad(x, w, v, eps)
	})
}

// layerNormGrad is the gradient of the layer norm for the output adjoint v,
// with x̂ = (x-μ)·r, r = 1/√(σ²+ε), g = v·w (per row of d elements):
//
//	dx = r·(g - mean(g) - x̂·mean(g·x̂)),  dw = Σrows v·x̂,  db = Σrows v.
//
// Row and column sums are matmuls with ones and per-row scalars are
// broadcast by matmuls too: both are much faster on the Go backend than
// its (scalar, iterator-based) reductions and implicit broadcasts.
func layerNormGrad(x, w, v *graph.Node, eps float64) []*graph.Node {
	d := x.Shape().Dimensions[x.Rank()-1]
	n := x.Shape().Size() / d
	x2, v2 := reshapeTo(x, n, d), reshapeTo(v, n, d)
	inv := 1 / float64(d)
	mean := graph.MulScalar(rowSums(x2), inv)                                                             // [n, 1]
	centred := graph.Sub(x2, broadcastCols(mean, d))                                                      // [n, d]
	rstd := graph.Rsqrt(graph.AddScalar(graph.MulScalar(rowSums(graph.Mul(centred, centred)), inv), eps)) // [n, 1]
	xhat := graph.Mul(centred, broadcastCols(rstd, d))
	g := graph.Mul(v2, broadcastRows(w, n))
	meanG := graph.MulScalar(rowSums(g), inv)
	meanGX := graph.MulScalar(rowSums(graph.Mul(g, xhat)), inv)
	dx := graph.Sub(graph.Mul(g, broadcastCols(rstd, d)), broadcastCols(graph.Mul(rstd, meanG), d))
	dx = graph.Sub(dx, graph.Mul(xhat, broadcastCols(graph.Mul(rstd, meanGX), d)))
	dw := reshapeTo(colSums(graph.Mul(v2, xhat)), d)
	db := reshapeTo(colSums(v2), d)
	return []*graph.Node{reshapeTo(dx, x.Shape().Dimensions...), dw, db}
}

// Dropout zeroes elements with probability P in train mode and scales the
// rest by 1/(1-P); in eval mode it is the identity.
type Dropout struct {
	noChildren
	P float64
}

// TypeName implements Module.
func (d *Dropout) TypeName() string { return "Dropout" }

// ExtraRepr implements Module.
func (d *Dropout) ExtraRepr() string { return fmt.Sprintf("p=%s, inplace=False", formatFloat(d.P)) }

// Params implements Module.
func (d *Dropout) Params() []ParamSpec { return nil }

// Forward implements Leaf.
func (d *Dropout) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("Dropout", args, 0)
	if err != nil {
		return nil, err
	}
	return DropoutOp(c, x, d.P), nil
}

// DropoutOp applies dropout with rate p in train mode (identity otherwise).
func DropoutOp(c *Call, x *graph.Node, p float64) *graph.Node {
	if !c.Training || p <= 0 || c.Random == nil {
		return x
	}
	u := c.Random(x.Shape().Dimensions...)
	keep := graph.GreaterOrEqual(u, graph.Scalar(x.Graph(), u.DType(), p))
	return graph.Mul(x, DropoutMask(keep, x.DType(), p))
}

// DropoutMask is 1/(1-p) where keep is true and 0 elsewhere, in dtype: the
// dropout of x is x·mask, and so is the gradient's (one multiplication
// each way, where a Where needs a zeros tensor and a scaled copy).
func DropoutMask(keep *graph.Node, dtype dtypes.DType, p float64) *graph.Node {
	g := keep.Graph()
	return graph.Where(keep, graph.Scalar(g, dtype, 1/(1-p)), graph.ScalarZero(g, dtype))
}

// activation is a parameterless elementwise leaf.
type activation struct {
	noChildren
	name  string
	extra string
	fn    func(x *graph.Node) *graph.Node
}

func (a *activation) TypeName() string    { return a.name }
func (a *activation) ExtraRepr() string   { return a.extra }
func (a *activation) Params() []ParamSpec { return nil }
func (a *activation) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg(a.name, args, 0)
	if err != nil {
		return nil, err
	}
	return a.fn(x), nil
}

// NewReLU returns torch.nn.ReLU.
func NewReLU() Leaf { return &activation{name: "ReLU", fn: ReLUOp} }

// NewTanh returns torch.nn.Tanh.
func NewTanh() Leaf { return &activation{name: "Tanh", fn: graph.Tanh} }

// NewGELU returns exact (erf) GELU; typeName is the class to print
// (HuggingFace's "GELUActivation" or torch's "GELU").
func NewGELU(typeName string) Leaf {
	return &activation{name: typeName, fn: GELUOp}
}

// GELUOp is exact GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2)). It runs the Go
// backend's fused GELU; the gradient is v·(Φ(x) + x·φ(x)) with Φ(x) read
// back as GELU(x)/x (0.5 at x = 0) rather than recomputing erf.
func GELUOp(x *graph.Node) *graph.Node {
	slow := func() *graph.Node {
		return graph.Mul(graph.MulScalar(x, 0.5), graph.OnePlus(graph.Erf(graph.MulScalar(x, 1/math.Sqrt2))))
	}
	if !x.DType().IsFloat() {
		return slow()
	}
	fast := func() *graph.Node { return graph.BackendFusedGelu(x, true) }
	return CustomGradient([]*graph.Node{x}, x.Shape(), fast, slow, func(y, v *graph.Node) []*graph.Node {
		g := x.Graph()
		zero := graph.Equal(x, graph.ScalarZero(g, x.DType()))
		cdf := graph.Where(zero, graph.Scalar(g, x.DType(), 0.5), graph.Div(y, x))
		pdf := graph.MulScalar(graph.Exp(graph.MulScalar(graph.Mul(x, x), -0.5)), 1/math.Sqrt(2*math.Pi))
		return []*graph.Node{graph.Mul(v, graph.Add(cdf, graph.Mul(x, pdf)))}
	})
}

// SoftmaxOp is softmax over axis. Over the last axis it runs the Go
// backend's fused softmax with the gradient y·(v - Σ v·y) computed with
// matmul row sums; other axes use graph.Softmax.
func SoftmaxOp(x *graph.Node, axis int) *graph.Node {
	axis = normAxis(axis, x.Rank())
	if x.Rank() == 0 || axis != x.Rank()-1 || !x.DType().IsFloat() {
		return graph.Softmax(x, axis)
	}
	slow := func() *graph.Node { return graph.Softmax(x, axis) }
	fast := func() *graph.Node { return graph.BackendFusedSoftmax(x, axis) }
	return CustomGradient([]*graph.Node{x}, x.Shape(), fast, slow, func(y, v *graph.Node) []*graph.Node {
		return []*graph.Node{SoftmaxGrad(y, v)}
	})
}

// SoftmaxGrad is the gradient of a last-axis softmax with output y for the
// output adjoint v: y·(v - Σ_last v·y) = v·y - y·Σ_last v·y.
func SoftmaxGrad(y, v *graph.Node) *graph.Node { return SoftmaxGradFromProduct(y, graph.Mul(v, y)) }

// SoftmaxGradFromProduct is SoftmaxGrad given p = v·y: p - y·Σ_last p.
func SoftmaxGradFromProduct(y, p *graph.Node) *graph.Node {
	k := y.Shape().Dimensions[y.Rank()-1]
	m := y.Shape().Size() / k
	y2, p2 := reshapeTo(y, m, k), reshapeTo(p, m, k)
	dx := graph.Sub(p2, graph.Mul(y2, broadcastCols(rowSums(p2), k)))
	return reshapeTo(dx, y.Shape().Dimensions...)
}

// NewSoftmax returns torch.nn.Softmax over dim (negative counts from the end).
func NewSoftmax(dim int) Leaf {
	return &activation{name: "Softmax", extra: fmt.Sprintf("dim=%d", dim), fn: func(x *graph.Node) *graph.Node {
		return SoftmaxOp(x, dim)
	}}
}

// NewIdentity returns torch.nn.Identity.
func NewIdentity() Leaf {
	return &activation{name: "Identity", fn: func(x *graph.Node) *graph.Node { return x }}
}

// NewFlatten returns torch.nn.Flatten(start_dim=1, end_dim=-1).
func NewFlatten() Leaf {
	return &activation{name: "Flatten", extra: "start_dim=1, end_dim=-1", fn: func(x *graph.Node) *graph.Node {
		d := x.Shape().Dimensions
		if len(d) <= 1 {
			return x
		}
		rest := 1
		for _, v := range d[1:] {
			rest *= v
		}
		return graph.Reshape(x, d[0], rest)
	}}
}

func normAxis(axis, rank int) int {
	if axis < 0 {
		return axis + rank
	}
	return axis
}

// IgnoreIndex is the label CrossEntropyLoss leaves out, as PyTorch's
// default ignore_index: padding rows of a fixed-size batch carry it
// (data.IgnoreLabel, the same value).
const IgnoreIndex = -100

// CrossEntropyLoss is the mean negative log-likelihood of integer class
// labels under softmax(logits): args (logits [N, C], labels [N]). Rows
// labelled IgnoreIndex are left out of the mean (PyTorch's ignore_index
// = -100); when every row is, the loss is 0 (PyTorch: NaN).
type CrossEntropyLoss struct{ noChildren }

// TypeName implements Module.
func (*CrossEntropyLoss) TypeName() string { return "CrossEntropyLoss" }

// ExtraRepr implements Module.
func (*CrossEntropyLoss) ExtraRepr() string { return "" }

// Params implements Module.
func (*CrossEntropyLoss) Params() []ParamSpec { return nil }

// Forward implements Leaf.
func (*CrossEntropyLoss) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	logits, err := TensorArg("CrossEntropyLoss", args, 0)
	if err != nil {
		return nil, err
	}
	labels, err := TensorArg("CrossEntropyLoss", args, 1)
	if err != nil {
		return nil, err
	}
	if logits.Rank() != 2 || labels.Rank() != 1 || logits.Shape().Dimensions[0] != labels.Shape().Dimensions[0] {
		return nil, fmt.Errorf("CrossEntropyLoss: logits %v and labels %v, want [N, C] and [N]", logits.Shape().Dimensions, labels.Shape().Dimensions)
	}
	logp := graph.LogSoftmax(logits, 1)
	keep := graph.NotEqual(labels, graph.Scalar(labels.Graph(), labels.DType(), IgnoreIndex))
	safe := graph.Where(keep, labels, graph.ZerosLike(labels))
	onehot := graph.OneHot(safe, logits.Shape().Dimensions[1], logits.DType())
	nll := graph.Neg(graph.ReduceSum(graph.Mul(logp, onehot), 1))
	weight := graph.ConvertDType(keep, logits.DType())
	count := graph.Max(graph.ReduceAllSum(weight), graph.Scalar(logits.Graph(), logits.DType(), 1))
	return graph.Div(graph.ReduceAllSum(graph.Mul(nll, weight)), count), nil
}

// PyBool writes a bool as Python does (True, False), for ExtraRepr.
func PyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// ReLUOp is max(x, 0).
func ReLUOp(x *graph.Node) *graph.Node { return graph.Max(x, graph.ZerosLike(x)) }

// AlignRanks prepends size-1 axes to the lower-rank operand so that GoMLX's
// binary ops (which broadcast size-1 axes but not missing ones) follow
// PyTorch's broadcasting rules. Scalars are left as they are.
func AlignRanks(a, b *graph.Node) (*graph.Node, *graph.Node) {
	ra, rb := a.Rank(), b.Rank()
	switch {
	case ra == rb || ra == 0 || rb == 0:
		return a, b
	case ra < rb:
		return graph.InsertAxes(a, make([]int, rb-ra)...), b
	default:
		return a, graph.InsertAxes(b, make([]int, ra-rb)...)
	}
}

// Broadcasting wraps a GoMLX binary op with PyTorch's broadcasting.
func Broadcasting(op func(a, b *graph.Node) *graph.Node) func(a, b *graph.Node) *graph.Node {
	return func(a, b *graph.Node) *graph.Node { return op(AlignRanks(a, b)) }
}

// CustomGradient returns the value computed by fast, whose gradient with
// respect to inputs is grad(out, v) — one gradient (or nil) per input, from
// the output out and its adjoint v — instead of GoMLX's differentiation of
// fast's nodes. out must have shape outShape, and fast must build a new
// node (it is marked). When the backend lacks an op that fast uses, or
// fusion is disabled (GOMLX_FUSION=0), it returns slow() instead, an
// equivalent computation differentiated by GoMLX.
//
// GoMLX only attaches custom gradients to single-input identities, so the
// gradient is routed: fast's output gets a decomposed alternative (GoMLX's
// mechanism for fused ops) that is an identity with a custom gradient over
// a dead "carrier" node depending on every input through identities with
// custom gradients. GoMLX back-propagates from the last node to the first:
// the output's identity receives v first and computes every gradient; the
// input identities, created earlier, are reached later and return theirs.
// The carrier's own gradient nodes are left unused and pruned by the
// backend, and in eval mode only fast's nodes run.
func CustomGradient(inputs []*graph.Node, outShape shapes.Shape, fast, slow func() *graph.Node,
	grad func(out, v *graph.Node) []*graph.Node) *graph.Node {
	if on, err := strconv.ParseBool(os.Getenv(graph.FusionEnv)); err == nil && !on {
		return slow()
	}
	var (
		out   *graph.Node
		grads []*graph.Node
	)
	g := inputs[0].Graph()
	carrier := graph.ScalarZero(g, outShape.DType)
	for i, in := range inputs {
		wrapped := graph.IdentityWithCustomGradient(in, func(_, _ *graph.Node) *graph.Node {
			if grads == nil {
				panic(fmt.Errorf("nn.CustomGradient: input %d reached before the output's gradient", i))
			}
			return grads[i]
		})
		s := graph.ReduceAllSum(wrapped)
		if s.DType() != outShape.DType {
			s = graph.ConvertDType(s, outShape.DType)
		}
		carrier = graph.Add(carrier, s)
	}
	alt := graph.IdentityWithCustomGradient(graph.BroadcastToDims(carrier, outShape.Dimensions...), func(_, v *graph.Node) *graph.Node {
		grads = grad(out, v)
		if len(grads) != len(inputs) {
			panic(fmt.Errorf("nn.CustomGradient: %d gradients for %d inputs", len(grads), len(inputs)))
		}
		return v
	})
	var fused bool
	out, fused = graph.InternalFusedOpCaller(fast, func() *graph.Node { return alt }, true)
	if !fused {
		return slow()
	}
	if !out.Shape().Equal(outShape) {
		panic(fmt.Errorf("nn.CustomGradient: output shape %s, declared %s", out.Shape(), outShape))
	}
	return out
}

// reshapeTo reshapes x unless it already has dims (a Reshape may copy).
func reshapeTo(x *graph.Node, dims ...int) *graph.Node {
	if slices.Equal(x.Shape().Dimensions, dims) {
		return x
	}
	return graph.Reshape(x, dims...)
}

// onesOf is a constant-filled [dims...] tensor of x's dtype.
func onesOf(x *graph.Node, dims ...int) *graph.Node {
	return graph.Ones(x.Graph(), shapes.Make(x.DType(), dims...))
}

// rowSums sums x [m, k] over its last axis into [m, 1], as a matmul with
// ones (the Go backend's ReduceSum is a scalar loop, ~20× slower).
func rowSums(x *graph.Node) *graph.Node {
	return graph.DotGeneral(x, []int{1}, nil, onesOf(x, 1, x.Shape().Dimensions[1]), []int{1}, nil)
}

// colSums sums x [m, k] over its first axis into [1, k], as a matmul.
func colSums(x *graph.Node) *graph.Node {
	return graph.DotGeneral(onesOf(x, 1, x.Shape().Dimensions[0]), []int{1}, nil, x, []int{0}, nil)
}

// broadcastCols repeats c [m, 1] k times into [m, k], as a matmul: the Go
// backend's implicit broadcasting in binary ops is several times slower
// than a same-shape op.
func broadcastCols(c *graph.Node, k int) *graph.Node {
	return graph.DotGeneral(c, []int{1}, nil, onesOf(c, 1, k), []int{0}, nil)
}

// broadcastRows repeats r [k] m times into [m, k], as a matmul.
func broadcastRows(r *graph.Node, m int) *graph.Node {
	k := r.Shape().Size()
	return graph.DotGeneral(onesOf(r, m, 1), []int{1}, nil, reshapeTo(r, 1, k), []int{0}, nil)
}
