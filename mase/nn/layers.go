package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

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

// tensorArg returns argument i as a graph node, or an error naming the module.
func tensorArg(mod string, args []any, i int) (*graph.Node, error) {
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
	return fmt.Sprintf("in_features=%d, out_features=%d, bias=%s", l.InFeatures, l.OutFeatures, pyBool(l.Bias))
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
	x, err := tensorArg("Linear", args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) == 0 || d[len(d)-1] != l.InFeatures {
		return nil, fmt.Errorf("Linear %s: input shape %v, want last axis %d", c.Path, d, l.InFeatures)
	}
	w, err := c.Param("weight")
	if err != nil {
		return nil, err
	}
	y := LinearOp(x, w)
	if l.Bias {
		b, err := c.Param("bias")
		if err != nil {
			return nil, err
		}
		y = Broadcasting(graph.Add)(y, b)
	}
	return y, nil
}

// LinearOp computes x Wᵀ for x [..., in] and W [out, in], contracting the
// last axis of x with W's second axis.
func LinearOp(x, w *graph.Node) *graph.Node {
	return graph.DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
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
	ids, err := tensorArg("Embedding", args, 0)
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
	x, err := tensorArg("LayerNorm", args, 0)
	if err != nil {
		return nil, err
	}
	w, err := c.Param("weight")
	if err != nil {
		return nil, err
	}
	b, err := c.Param("bias")
	if err != nil {
		return nil, err
	}
	axis := x.Rank() - 1
	mean := graph.ReduceAndKeep(x, graph.ReduceMean, axis)
	centred := graph.Sub(x, mean)
	variance := graph.ReduceAndKeep(graph.Square(centred), graph.ReduceMean, axis)
	norm := graph.Div(centred, graph.Sqrt(graph.AddScalar(variance, l.Eps))) // Rsqrt has no gradient in GoMLX
	return Broadcasting(graph.Add)(Broadcasting(graph.Mul)(norm, w), b), nil
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
	x, err := tensorArg("Dropout", args, 0)
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
	scaled := graph.MulScalar(x, 1/(1-p))
	return graph.Where(keep, scaled, graph.ZerosLike(x))
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
	x, err := tensorArg(a.name, args, 0)
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

// GELUOp is exact GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2)).
func GELUOp(x *graph.Node) *graph.Node {
	return graph.Mul(graph.MulScalar(x, 0.5), graph.OnePlus(graph.Erf(graph.MulScalar(x, 1/math.Sqrt2))))
}

// NewSoftmax returns torch.nn.Softmax over dim (negative counts from the end).
func NewSoftmax(dim int) Leaf {
	return &activation{name: "Softmax", extra: fmt.Sprintf("dim=%d", dim), fn: func(x *graph.Node) *graph.Node {
		return graph.Softmax(x, normAxis(dim, x.Rank()))
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

// CrossEntropyLoss is the mean negative log-likelihood of integer class
// labels under softmax(logits): args (logits [N, C], labels [N]).
type CrossEntropyLoss struct{ noChildren }

// TypeName implements Module.
func (*CrossEntropyLoss) TypeName() string { return "CrossEntropyLoss" }

// ExtraRepr implements Module.
func (*CrossEntropyLoss) ExtraRepr() string { return "" }

// Params implements Module.
func (*CrossEntropyLoss) Params() []ParamSpec { return nil }

// Forward implements Leaf.
func (*CrossEntropyLoss) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	logits, err := tensorArg("CrossEntropyLoss", args, 0)
	if err != nil {
		return nil, err
	}
	labels, err := tensorArg("CrossEntropyLoss", args, 1)
	if err != nil {
		return nil, err
	}
	if logits.Rank() != 2 || labels.Rank() != 1 || logits.Shape().Dimensions[0] != labels.Shape().Dimensions[0] {
		return nil, fmt.Errorf("CrossEntropyLoss: logits %v and labels %v, want [N, C] and [N]", logits.Shape().Dimensions, labels.Shape().Dimensions)
	}
	logp := graph.LogSoftmax(logits, 1)
	onehot := graph.OneHot(labels, logits.Shape().Dimensions[1], logits.DType())
	nll := graph.Neg(graph.ReduceSum(graph.Mul(logp, onehot), 1))
	return graph.ReduceAllMean(nll), nil
}

func pyBool(b bool) string {
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
