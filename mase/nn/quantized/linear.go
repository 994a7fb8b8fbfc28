// Package quantized holds the fake-quantised modules of QAT and PTQ: a
// Linear of each of MASE's quantised classes, whose forward quantises its
// operands with straight-through gradients.
package quantized

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"

	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/quant"
)

func init() {
	nn.RegisterModuleKind(Kind, func() nn.Module { return &Linear{} })
}

// Linear is a Linear layer of one of MASE's quantised classes
// (chop.nn.quantized.modules.linear: LinearInteger, LinearMinifloatIEEE,
// ..., LinearBinaryResidualSign, and gomase's LinearMXInt8), chosen by
// Config.Name. Its forward is linear(Q_in(x), Q_w(W), Q_b(b)), with the
// output quantised too when Config.DataOut is set; each Q is the operand's
// quant.Spec built with Spec.Graph, whose gradient is the straight-through
// estimator, so the layer trains (QAT).
//
// Parameters are named as nn.Linear's, "weight" [out, in] and "bias"
// [out], so HuggingFace names and weight copying work unchanged; the bias
// is kept and used by every class (MASE's Tutorial 6 constructor leaves
// the new layer's bias freshly initialised). LinearBinaryResidualSign adds
// MASE's "gamma" (a learnt scale, 1), "means" (the residual levels,
// [L..1]/Σ, when data_in_residual_sign) and a frozen "pruning_masks" of
// ones [out, in].
//
// Stochastic binarisation draws from the call's random source in train
// mode; in eval mode (Call.Random nil) it uses u = 0.5, i.e. +1 exactly
// when p = (x+1)/2 ≥ 0.5: the deterministic sign.
type Linear struct {
	InFeatures  int                `json:"InFeatures"`
	OutFeatures int                `json:"OutFeatures"`
	Bias        bool               `json:"Bias"`
	Config      quant.LinearConfig `json:"Config"`
}

// Kind is the Linear's kind in checkpoints (nn.ModuleKind).
const Kind = "QuantizedLinear"

// ModuleKind implements nn.Kinded.
func (l *Linear) ModuleKind() string { return Kind }

// Children implements nn.Module: a leaf has none.
func (l *Linear) Children() []nn.Named { return nil }

// NewLinear returns a quantised Linear of in → out features with
// the given config (see quant.ParseLinearConfig); the config and the sizes
// are checked (Validate).
func NewLinear(in, out int, bias bool, cfg quant.LinearConfig) (*Linear, error) {
	l := &Linear{InFeatures: in, OutFeatures: out, Bias: bias, Config: cfg}
	if err := l.Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// Validate checks the sizes and the config (nn.Validator): features ≥ 1,
// a valid quant.LinearConfig, and for mxint8 a weight (and bias) whose
// element count the group size divides.
func (l *Linear) Validate() error {
	if l.InFeatures < 1 || l.OutFeatures < 1 {
		return fmt.Errorf("quantised Linear %d → %d: want in_features and out_features ≥ 1", l.InFeatures, l.OutFeatures)
	}
	if err := l.Config.Validate(); err != nil {
		return fmt.Errorf("quantised Linear: %w", err)
	}
	if l.Config.Bypass {
		return nil
	}
	check := func(what string, s *quant.Spec, n int) error {
		if s != nil && s.Format == quant.MXInt8 && n%s.GroupSize != 0 {
			return fmt.Errorf("quantised Linear %d → %d: the %s has %d elements, not a multiple of mxint8 group_size %d (allowed: a group size dividing it)", l.InFeatures, l.OutFeatures, what, n, s.GroupSize)
		}
		return nil
	}
	if err := check("weight", l.Config.Weight, l.InFeatures*l.OutFeatures); err != nil {
		return err
	}
	if l.Bias {
		return check("bias", l.Config.Bias, l.OutFeatures)
	}
	return nil
}

// TypeName implements Module: MASE's class name (LinearInteger, ...).
func (l *Linear) TypeName() string { return l.Config.TypeName() }

// ExtraRepr implements Module, as torch.nn.Linear's (MASE's quantised
// classes inherit it).
func (l *Linear) ExtraRepr() string {
	return fmt.Sprintf("in_features=%d, out_features=%d, bias=%s", l.InFeatures, l.OutFeatures, nn.PyBool(l.Bias))
}

// MaseOp declares the operator for metadata passes: MASE's Linear
// subclasses are linear.
func (l *Linear) MaseOp() (string, string) { return "module_related_func", "linear" }

// residual reports whether the layer has residual-sign parameters.
func (l *Linear) residual() bool {
	return l.Config.Name == quant.BinaryResidual && !l.Config.Bypass
}

// levels is the residual-sign level count.
func (l *Linear) levels() int {
	if s := l.Config.DataIn; s != nil {
		if len(s.Means) > 0 {
			return len(s.Means)
		}
		if s.Levels > 0 {
			return s.Levels
		}
	}
	return 2
}

// Params implements Module.
func (l *Linear) Params() []nn.ParamSpec {
	bound := 1 / math.Sqrt(float64(l.InFeatures))
	ps := []nn.ParamSpec{{Name: "weight", Shape: []int{l.OutFeatures, l.InFeatures}, Init: nn.Uniform(bound)}}
	if l.Bias {
		ps = append(ps, nn.ParamSpec{Name: "bias", Shape: []int{l.OutFeatures}, Init: nn.Uniform(bound)})
	}
	if l.residual() {
		ps = append(ps, nn.ParamSpec{Name: "gamma", Shape: []int{}, Init: nn.Ones})
		if l.Config.DataIn != nil {
			means := l.Config.DataIn.Means
			if len(means) == 0 {
				means = quant.DefaultResidualMeans(l.levels())
			}
			ps = append(ps, nn.ParamSpec{Name: "means", Shape: []int{len(means)}, Init: func(_ []int, _ *rand.Rand) []float32 {
				out := make([]float32, len(means))
				for i, m := range means {
					out[i] = float32(m)
				}
				return out
			}})
		}
		ps = append(ps, nn.ParamSpec{Name: "pruning_masks", Shape: []int{l.OutFeatures, l.InFeatures}, Init: nn.Ones, Frozen: true})
	}
	return ps
}

// Forward implements Leaf.
func (l *Linear) Forward(c *nn.Call, args []any, _ map[string]any) (any, error) {
	name := l.TypeName()
	x, err := nn.TensorArg(name, args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) == 0 || d[len(d)-1] != l.InFeatures {
		return nil, fmt.Errorf("%s %s: input shape %v, want last axis %d", name, c.Path, d, l.InFeatures)
	}
	w, b, err := c.WeightAndBias(l.Bias)
	if err != nil {
		return nil, err
	}
	random := c.Random
	if random == nil {
		random = func(dims ...int) *graph.Node { // eval mode: u = 0.5
			return graph.BroadcastToDims(graph.Scalar(c.Graph, x.DType(), 0.5), dims...)
		}
	}
	q := func(s *quant.Spec, v *graph.Node, what string) (*graph.Node, error) {
		if s == nil || v == nil {
			return v, nil
		}
		out, err := s.Graph(v, random)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %s quantiser: %w", name, c.Path, what, err)
		}
		return out, nil
	}
	cfg := l.Config
	linear := func(x, w, b *graph.Node) *graph.Node {
		y := nn.LinearOp(x, w)
		if b != nil {
			y = nn.Broadcasting(graph.Add)(y, b)
		}
		return y
	}
	switch {
	case cfg.Bypass:
		return linear(x, w, b), nil
	case cfg.Name == quant.BinaryScaling && !cfg.BinaryTraining:
		// MASE clamps the stored weight in place (weight.data.clamp_) and
		// runs a float linear; gomase clamps in the forward only, with the
		// gradient passing straight through.
		return linear(x, clampWeight(w), b), nil
	case l.residual():
		return l.residualForward(c, x, w, b, random)
	}
	if x, err = q(cfg.DataIn, x, "data_in"); err != nil {
		return nil, err
	}
	if w, err = q(cfg.Weight, w, "weight"); err != nil {
		return nil, err
	}
	if b, err = q(cfg.Bias, b, "bias"); err != nil {
		return nil, err
	}
	y := linear(x, w, b)
	return q(cfg.DataOut, y, "data_out")
}

// clampWeight is clamp(W, −1, 1) in the forward, identity gradient.
func clampWeight(w *graph.Node) *graph.Node {
	return quant.StraightThrough(w, graph.ClipScalar(w, -1, 1))
}

// residualForward is LinearBinaryResidualSign: linear(x_expanded,
// Q_w(W)·|γ|·masks, b), x_expanded the residual-sign expansion of x with
// the learnt means (x itself without data_in_residual_sign), Q_w binary
// (clamp to [−1, 1] without binary_training).
func (l *Linear) residualForward(c *nn.Call, x, w, b *graph.Node, random func(dims ...int) *graph.Node) (any, error) {
	gamma, err := c.Param("gamma")
	if err != nil {
		return nil, err
	}
	masks, err := c.Param("pruning_masks")
	if err != nil {
		return nil, err
	}
	if l.Config.DataIn != nil {
		means, err := c.Param("means")
		if err != nil {
			return nil, err
		}
		x = ResidualSignOp(x, means)
	}
	if l.Config.BinaryTraining {
		if w, err = l.Config.Weight.Graph(w, random); err != nil {
			return nil, fmt.Errorf("%s %s: weight quantiser: %w", l.TypeName(), c.Path, err)
		}
	} else {
		w = clampWeight(w)
	}
	w = graph.Mul(graph.Mul(w, graph.Abs(gamma)), masks)
	y := nn.LinearOp(x, w)
	if b != nil {
		y = nn.Broadcasting(graph.Add)(y, b)
	}
	return y, nil
}

// ResidualSignOp is MASE's residual_sign_quantizer summed over its levels
// (spec §6.9), with the means as a node of shape [L]: o_l = b(r_l)·|μ_l|,
// r_(l+1) = r_l − o_l, result Σ o_l, where b(v) = sign(clamp(v, −1, 1))
// has MASE's gradient: straight through the clamp (1 inside [−1, 1], 0
// outside). The means get their gradient b(r_l)·sign(μ_l), as in MASE.
func ResidualSignOp(x, means *graph.Node) *graph.Node {
	out, r := graph.ZerosLike(x), x
	for i := range means.Shape().Dimensions[0] {
		mu := graph.Abs(graph.Slice(means, graph.AxisRange(i, i+1)))
		mu = graph.Reshape(mu) // scalar
		c := graph.Min(graph.Max(r, graph.Scalar(x.Graph(), x.DType(), -1)), graph.Scalar(x.Graph(), x.DType(), 1))
		o := graph.Mul(quant.StraightThrough(c, graph.Sign(c)), graph.ConvertDType(mu, x.DType()))
		out = graph.Add(out, o)
		r = graph.Sub(r, o)
	}
	return out
}
