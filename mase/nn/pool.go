package nn

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// MaxPool2d is torch.nn.MaxPool2d(kernel_size, stride, padding, dilation,
// ceil_mode=False) with square windows on [N, C, H, W]: the maximum over
// each window of the input padded with −∞ (padded positions never win).
type MaxPool2d struct {
	noChildren
	KernelSize, Stride, Padding, Dilation int
	// Lowering selects the implementation (LowerAuto when zero); not
	// printed.
	Lowering Lowering `json:",omitempty"`
}

// NewMaxPool2d returns torch.nn.MaxPool2d(kernel, stride, padding)
// (dilation 1).
func NewMaxPool2d(kernel, stride, padding int) *MaxPool2d {
	return &MaxPool2d{KernelSize: kernel, Stride: stride, Padding: padding, Dilation: 1}
}

// Validate implements Validator: torch's rules (padding at most half the
// kernel).
func (l *MaxPool2d) Validate() error {
	if l.KernelSize <= 0 || l.Stride <= 0 || l.Dilation <= 0 || l.Padding < 0 {
		return fmt.Errorf("MaxPool2d: kernel_size %d, stride %d and dilation %d must be positive and padding %d non-negative", l.KernelSize, l.Stride, l.Dilation, l.Padding)
	}
	if 2*l.Padding > l.KernelSize {
		return fmt.Errorf("MaxPool2d: padding %d should be at most half of kernel_size %d", l.Padding, l.KernelSize)
	}
	return nil
}

// TypeName implements Module.
func (l *MaxPool2d) TypeName() string { return "MaxPool2d" }

// ExtraRepr implements Module, as torch's _MaxPoolNd.extra_repr.
func (l *MaxPool2d) ExtraRepr() string {
	return fmt.Sprintf("kernel_size=%d, stride=%d, padding=%d, dilation=%d, ceil_mode=False", l.KernelSize, l.Stride, l.Padding, l.Dilation)
}

// Params implements Module.
func (l *MaxPool2d) Params() []ParamSpec { return nil }

// Forward implements Leaf.
func (l *MaxPool2d) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("MaxPool2d", args, 0)
	if err != nil {
		return nil, err
	}
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	y, err := MaxPool2dOp(x, [2]int{l.KernelSize, l.KernelSize}, [2]int{l.Stride, l.Stride},
		[2]int{l.Padding, l.Padding}, [2]int{l.Dilation, l.Dilation}, l.Lowering)
	if err != nil {
		return nil, fmt.Errorf("MaxPool2d %s: %w", c.Path, err)
	}
	return y, nil
}

// MaxPool2dOp is torch.nn.functional.max_pool2d (ceil_mode=False) on x
// [N, C, H, W] with per-axis kernel, stride, padding and dilation.
func MaxPool2dOp(x *graph.Node, kernel, stride, padding, dilation [2]int, lowering Lowering) (*graph.Node, error) {
	if x.Rank() != 4 {
		return nil, fmt.Errorf("max_pool2d: input %v, want [N, C, H, W]", x.Shape().Dimensions)
	}
	d := x.Shape().Dimensions
	var out [2]int
	for i := range 2 {
		if kernel[i] <= 0 || stride[i] <= 0 || dilation[i] <= 0 || padding[i] < 0 || 2*padding[i] > kernel[i] {
			return nil, fmt.Errorf("max_pool2d: kernel %v, stride %v, padding %v, dilation %v: want positive kernel, stride and dilation, padding in [0, kernel/2]", kernel, stride, padding, dilation)
		}
		out[i] = ConvOutputSize(d[2+i], kernel[i], stride[i], padding[i], dilation[i])
		if out[i] <= 0 {
			return nil, fmt.Errorf("max_pool2d: input %v is smaller than the window %v (padding %v, dilation %v)", d, kernel, padding, dilation)
		}
	}
	g := x.Graph()
	switch lowering.resolve(g) {
	case LowerNative:
		var wdil []int
		if dilation != [2]int{1, 1} {
			wdil = []int{1, 1, dilation[0], dilation[1]}
		}
		// ReduceWindow(max) pads with the reduction's identity, −∞.
		return graph.BackendReduceWindow(x, compute.ReduceOpMax, []int{1, 1, kernel[0], kernel[1]}, []int{1, 1, stride[0], stride[1]},
			nil, wdil, [][2]int{{0, 0}, {0, 0}, {padding[0], padding[0]}, {padding[1], padding[1]}}), nil
	case LowerDecomposed:
		xp := padSpatial(x, graph.Infinity(g, x.DType(), -1), padding)
		var y *graph.Node
		for _, s := range windowSlices(xp, kernel[0], kernel[1], out[0], out[1], stride, dilation) {
			if y == nil {
				y = s
			} else {
				y = graph.Max(y, s)
			}
		}
		return y, nil
	}
	return nil, fmt.Errorf("max_pool2d: unknown lowering %v", lowering)
}

// AdaptiveAvgPool2d is torch.nn.AdaptiveAvgPool2d(output_size): output
// cell (i, j) of [N, C, oh, ow] is the mean of the input rows
// ⌊i·H/oh⌋ … ⌈(i+1)·H/oh⌉−1 and columns ⌊j·W/ow⌋ … ⌈(j+1)·W/ow⌉−1.
type AdaptiveAvgPool2d struct {
	noChildren
	OutputSize [2]int
}

// NewAdaptiveAvgPool2d returns torch.nn.AdaptiveAvgPool2d((oh, ow)).
func NewAdaptiveAvgPool2d(oh, ow int) *AdaptiveAvgPool2d {
	return &AdaptiveAvgPool2d{OutputSize: [2]int{oh, ow}}
}

// Validate implements Validator.
func (l *AdaptiveAvgPool2d) Validate() error {
	if l.OutputSize[0] <= 0 || l.OutputSize[1] <= 0 {
		return fmt.Errorf("AdaptiveAvgPool2d: output_size %v must be positive", l.OutputSize)
	}
	return nil
}

// TypeName implements Module.
func (l *AdaptiveAvgPool2d) TypeName() string { return "AdaptiveAvgPool2d" }

// ExtraRepr implements Module.
func (l *AdaptiveAvgPool2d) ExtraRepr() string { return "output_size=" + pyPair(l.OutputSize) }

// Params implements Module.
func (l *AdaptiveAvgPool2d) Params() []ParamSpec { return nil }

// Forward implements Leaf.
func (l *AdaptiveAvgPool2d) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("AdaptiveAvgPool2d", args, 0)
	if err != nil {
		return nil, err
	}
	y, err := AdaptiveAvgPool2dOp(x, l.OutputSize)
	if err != nil {
		return nil, fmt.Errorf("AdaptiveAvgPool2d %s: %w", c.Path, err)
	}
	return y, nil
}

// AdaptiveAvgPool2dOp is torch.nn.functional.adaptive_avg_pool2d on x [N,
// C, H, W] for any positive output size. The average over a cell's
// rectangle is separable, so the op is two matmuls with constant pooling
// matrices Ph [oh, H] and Pw [ow, W] (row i holds 1/len over the cell's
// range): y = Ph·x·Pwᵀ per (n, c). For (1, 1) it is one matmul with a
// column of 1/(H·W) — the global average pool.
func AdaptiveAvgPool2dOp(x *graph.Node, outputSize [2]int) (*graph.Node, error) {
	if x.Rank() != 4 {
		return nil, fmt.Errorf("adaptive_avg_pool2d: input %v, want [N, C, H, W]", x.Shape().Dimensions)
	}
	if !x.DType().IsFloat() {
		return nil, fmt.Errorf("adaptive_avg_pool2d: input is %s, want a float tensor", x.DType())
	}
	oh, ow := outputSize[0], outputSize[1]
	if oh <= 0 || ow <= 0 {
		return nil, fmt.Errorf("adaptive_avg_pool2d: output size %v must be positive", outputSize)
	}
	d := x.Shape().Dimensions
	n, c, h, w := d[0], d[1], d[2], d[3]
	g := x.Graph()
	if oh == 1 && ow == 1 {
		col := graph.Const(g, poolMatrix(1, h*w)) // [1, H·W]
		flat := graph.Reshape(x, n*c, h*w)
		y := graph.DotGeneral(flat, []int{1}, nil, graph.ConvertDType(col, x.DType()), []int{1}, nil) // [N·C, 1]
		return graph.Reshape(y, n, c, 1, 1), nil
	}
	ph := graph.ConvertDType(graph.Const(g, poolMatrix(oh, h)), x.DType())
	pw := graph.ConvertDType(graph.Const(g, poolMatrix(ow, w)), x.DType())
	y := graph.DotGeneral(x, []int{2}, nil, ph, []int{1}, nil) // [N, C, W, oh]
	y = graph.DotGeneral(y, []int{2}, nil, pw, []int{1}, nil)  // [N, C, oh, ow]
	return y, nil
}

// poolMatrix is the [out, in] float32 matrix of adaptive average pooling
// along one axis: row i is 1/len on torch's range [⌊i·in/out⌋,
// ⌈(i+1)·in/out⌉) and 0 elsewhere.
func poolMatrix(out, in int) *tensors.Tensor {
	m := make([]float32, out*in)
	for i := range out {
		start := i * in / out
		end := ((i+1)*in + out - 1) / out
		for k := start; k < end; k++ {
			m[i*in+k] = 1 / float32(end-start)
		}
	}
	return tensors.FromFlatDataAndDimensions(m, out, in)
}

// NewReLUInplace returns torch.nn.ReLU(inplace=True), as torchvision's
// models build it: the same computation as NewReLU (GoMLX has no in-place
// ops), printed with its flag.
func NewReLUInplace() Leaf { return &activation{name: "ReLU", extra: "inplace=True", fn: ReLUOp} }
