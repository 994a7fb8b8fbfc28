package nn

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/graph"
)

// LoRALinear is a Linear layer with a low-rank adapter (LoRA, Hu et al.
// 2021): y = x Wᵀ + b + (α/r)·(dropout(x) Aᵀ) Bᵀ, with A [r, in] drawn like
// PyTorch's Linear default and B [out, r] zero, so a freshly inserted
// adapter leaves the layer's output unchanged. The base weight and bias are
// frozen; only A and B train. Parameter names follow MASE's LoRALinear
// (linear.weight, linear.bias, lora_a.weight, lora_b.weight).
type LoRALinear struct {
	noChildren
	InFeatures, OutFeatures int
	Bias                    bool
	Rank                    int
	Alpha                   float64
	Dropout                 float64
}

// NewLoRALinear returns a LoRA-wrapped Linear; it checks rank ≥ 1 and
// dropout in [0, 1). A rank above min(in, out) is allowed (MASE adapts
// bert-tiny's 128→2 classifier with rank 6), though it adds no capacity.
func NewLoRALinear(in, out int, bias bool, rank int, alpha, dropout float64) (*LoRALinear, error) {
	if rank < 1 {
		return nil, fmt.Errorf("LoRA rank %d: want rank ≥ 1", rank)
	}
	if dropout < 0 || dropout >= 1 {
		return nil, fmt.Errorf("LoRA dropout %v: want a probability in [0, 1)", dropout)
	}
	return &LoRALinear{InFeatures: in, OutFeatures: out, Bias: bias, Rank: rank, Alpha: alpha, Dropout: dropout}, nil
}

// Scale is α/r, the factor on the adapter's output.
func (l *LoRALinear) Scale() float64 { return l.Alpha / float64(l.Rank) }

// TypeName implements Module.
func (l *LoRALinear) TypeName() string { return "LoRALinear" }

// ExtraRepr implements Module.
func (l *LoRALinear) ExtraRepr() string {
	return fmt.Sprintf("in_features=%d, out_features=%d, bias=%s, rank=%d, alpha=%s, dropout=%s",
		l.InFeatures, l.OutFeatures, PyBool(l.Bias), l.Rank, formatFloat(l.Alpha), formatFloat(l.Dropout))
}

// MaseOp declares the operator for metadata passes: a LoRALinear is a linear.
func (l *LoRALinear) MaseOp() (string, string) { return "module_related_func", "linear" }

// Params implements Module.
func (l *LoRALinear) Params() []ParamSpec {
	ps := []ParamSpec{{Name: "linear.weight", Shape: []int{l.OutFeatures, l.InFeatures}, Init: Zeros, Frozen: true}}
	if l.Bias {
		ps = append(ps, ParamSpec{Name: "linear.bias", Shape: []int{l.OutFeatures}, Init: Zeros, Frozen: true})
	}
	return append(ps,
		ParamSpec{Name: "lora_a.weight", Shape: []int{l.Rank, l.InFeatures}, Init: Uniform(1 / math.Sqrt(float64(l.InFeatures)))},
		ParamSpec{Name: "lora_b.weight", Shape: []int{l.OutFeatures, l.Rank}, Init: Zeros})
}

// Forward implements Leaf.
func (l *LoRALinear) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("LoRALinear", args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) == 0 || d[len(d)-1] != l.InFeatures {
		return nil, fmt.Errorf("LoRALinear %s: input shape %v, want last axis %d", c.Path, d, l.InFeatures)
	}
	get := func(name string) *graph.Node {
		if err != nil {
			return nil
		}
		var n *graph.Node
		n, err = c.Param(name)
		return n
	}
	w, a, bm := get("linear.weight"), get("lora_a.weight"), get("lora_b.weight")
	if err != nil {
		return nil, err
	}
	y := LinearOp(x, w)
	if l.Bias {
		b := get("linear.bias")
		if err != nil {
			return nil, err
		}
		y = Broadcasting(graph.Add)(y, b)
	}
	adapter := LinearOp(LinearOp(DropoutOp(c, x, l.Dropout), a), bm)
	return graph.Add(y, graph.MulScalar(adapter, l.Scale())), nil
}
