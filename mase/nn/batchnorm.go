package nn

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/core/graph"
)

// BatchNorm2d is torch.nn.BatchNorm2d(num_features, eps, momentum,
// affine=True, track_running_stats=True) on [N, C, H, W] inputs: weight
// and bias parameters [C] (1 and 0 at creation), and running_mean and
// running_var buffers [C] (0 and 1; see BufferDeclarer).
//
// In eval mode it normalises with the running statistics. In train mode it
// normalises with the batch's statistics over (N, H, W) (biased variance)
// and moves the running statistics towards them, as torch does:
// running ← (1 − momentum)·running + momentum·batch, with the unbiased
// batch variance for running_var. torch's num_batches_tracked buffer is
// not kept: it only matters for momentum=None (a cumulative average),
// which this module does not offer.
type BatchNorm2d struct {
	noChildren
	NumFeatures int
	Eps         float64
	Momentum    float64
}

// NewBatchNorm2d returns torch.nn.BatchNorm2d(numFeatures) with torch's
// defaults eps=1e-5 and momentum=0.1.
func NewBatchNorm2d(numFeatures int) *BatchNorm2d {
	return &BatchNorm2d{NumFeatures: numFeatures, Eps: 1e-5, Momentum: 0.1}
}

// Validate implements Validator.
func (l *BatchNorm2d) Validate() error {
	if l.NumFeatures <= 0 {
		return fmt.Errorf("BatchNorm2d: num_features %d must be positive", l.NumFeatures)
	}
	if l.Eps <= 0 || l.Momentum < 0 || l.Momentum > 1 {
		return fmt.Errorf("BatchNorm2d: eps %v must be positive and momentum %v in [0, 1]", l.Eps, l.Momentum)
	}
	return nil
}

// TypeName implements Module.
func (l *BatchNorm2d) TypeName() string { return "BatchNorm2d" }

// ExtraRepr implements Module, as torch's _NormBase.extra_repr.
func (l *BatchNorm2d) ExtraRepr() string {
	return fmt.Sprintf("%d, eps=%s, momentum=%s, affine=True, track_running_stats=True", l.NumFeatures, pyRepr(l.Eps), pyRepr(l.Momentum))
}

// pyRepr prints a float as Python's repr does (1e-05, 0.1, 1.0).
func pyRepr(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// Params implements Module.
func (l *BatchNorm2d) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Shape: []int{l.NumFeatures}, Init: Ones}, {Name: "bias", Shape: []int{l.NumFeatures}, Init: Zeros}}
}

// BufferSpecs implements BufferDeclarer: running_mean (zeros) and
// running_var (ones).
func (l *BatchNorm2d) BufferSpecs() []ParamSpec {
	return []ParamSpec{{Name: "running_mean", Shape: []int{l.NumFeatures}, Init: Zeros}, {Name: "running_var", Shape: []int{l.NumFeatures}, Init: Ones}}
}

// Forward implements Leaf.
func (l *BatchNorm2d) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("BatchNorm2d", args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) != 4 || d[1] != l.NumFeatures {
		return nil, fmt.Errorf("BatchNorm2d %s: input shape %v, want [N, %d, H, W]", c.Path, d, l.NumFeatures)
	}
	w, b, err := c.WeightAndBias(true)
	if err != nil {
		return nil, err
	}
	mean, err := c.Buffer("running_mean")
	if err != nil {
		return nil, err
	}
	variance, err := c.Buffer("running_var")
	if err != nil {
		return nil, err
	}
	if !c.Training {
		return BatchNorm2dEvalOp(x, w, b, mean, variance, l.Eps), nil
	}
	d := x.Shape().Dimensions
	if n := d[0] * d[2] * d[3]; n <= 1 {
		return nil, fmt.Errorf("BatchNorm2d %s: expected more than 1 value per channel when training, got input %v", c.Path, d)
	}
	y, bMean, bVar := BatchNorm2dTrainOp(x, w, b, l.Eps)
	mom := l.Momentum
	update := func(name string, running, batch *graph.Node) error {
		batch = graph.StopGradient(graph.ConvertDType(batch, running.DType()))
		return c.SetBuffer(name, graph.Add(graph.MulScalar(running, 1-mom), graph.MulScalar(batch, mom)))
	}
	if err := update("running_mean", mean, bMean); err != nil {
		return nil, err
	}
	if err := update("running_var", variance, bVar); err != nil {
		return nil, err
	}
	return y, nil
}

// perChannel reshapes a [C] vector to [1, C, 1, 1].
func perChannel(v *graph.Node) *graph.Node { return graph.Reshape(v, 1, v.Shape().Size(), 1, 1) }

// BatchNorm2dEvalOp normalises x [N, C, H, W] with given statistics mean
// and variance [C], then scales by w and shifts by b [C]:
// (x − mean)/√(variance + eps)·w + b, computed as x·scale + shift with
// per-channel scale = w/√(variance + eps) and shift = b − mean·scale.
func BatchNorm2dEvalOp(x, w, b, mean, variance *graph.Node, eps float64) *graph.Node {
	scale := graph.Div(w, graph.Sqrt(graph.AddScalar(variance, eps))) // Rsqrt has no gradient in GoMLX
	shift := graph.Sub(b, graph.Mul(mean, scale))
	return graph.Add(graph.Mul(x, perChannel(scale)), perChannel(shift))
}

// BatchNorm2dTrainOp normalises x [N, C, H, W] with its own statistics
// over (N, H, W) and applies w and b [C]. It returns the output, the batch
// mean [C] and the unbiased batch variance [C] (the one torch folds into
// running_var; the normalisation uses the biased one).
func BatchNorm2dTrainOp(x, w, b *graph.Node, eps float64) (y, mean, unbiased *graph.Node) {
	d := x.Shape().Dimensions
	n := float64(d[0] * d[2] * d[3])
	mean = graph.ReduceMean(x, 0, 2, 3)
	centred := graph.Sub(x, perChannel(mean))
	biased := graph.ReduceMean(graph.Square(centred), 0, 2, 3)
	scale := graph.Div(w, graph.Sqrt(graph.AddScalar(biased, eps)))
	y = graph.Add(graph.Mul(centred, perChannel(scale)), perChannel(b))
	unbiased = graph.MulScalar(biased, n/(n-1))
	return y, mean, unbiased
}
