package nn

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/graph"
)

// DefaultNegativeSlope is torch.nn.LeakyReLU's default negative_slope.
const DefaultNegativeSlope = 0.01

// LeakyReLU is torch.nn.LeakyReLU: x for x ≥ 0, NegativeSlope·x below.
type LeakyReLU struct {
	noChildren
	// NegativeSlope is torch's negative_slope (default 0.01).
	NegativeSlope float64 `json:"negative_slope"`
}

// NewLeakyReLU returns torch.nn.LeakyReLU(negative_slope).
func NewLeakyReLU(negativeSlope float64) *LeakyReLU {
	return &LeakyReLU{NegativeSlope: negativeSlope}
}

// TypeName implements Module.
func (l *LeakyReLU) TypeName() string { return "LeakyReLU" }

// ExtraRepr implements Module, as torch prints it.
func (l *LeakyReLU) ExtraRepr() string {
	return fmt.Sprintf("negative_slope=%s", formatFloat(l.NegativeSlope))
}

// Params implements Module.
func (l *LeakyReLU) Params() []ParamSpec { return nil }

// Validate implements Validator: the slope must be a finite number.
func (l *LeakyReLU) Validate() error {
	if math.IsNaN(l.NegativeSlope) || math.IsInf(l.NegativeSlope, 0) {
		return fmt.Errorf("LeakyReLU: negative_slope %v is not a finite number", l.NegativeSlope)
	}
	return nil
}

// Forward implements Leaf.
func (l *LeakyReLU) Forward(_ *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("LeakyReLU", args, 0)
	if err != nil {
		return nil, err
	}
	return LeakyReLUOp(x, l.NegativeSlope), nil
}

// LeakyReLUOp is torch's leaky_relu: where(x > 0, x, slope·x) (x = 0 gives
// 0 either way).
func LeakyReLUOp(x *graph.Node, negativeSlope float64) *graph.Node {
	g := x.Graph()
	pos := graph.GreaterThan(x, graph.ScalarZero(g, x.DType()))
	return graph.Where(pos, x, graph.MulScalar(x, negativeSlope))
}
