package nn

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
)

func init() {
	RegisterModuleKind("Conv2d", func() Module { return &Conv2d{} })
	RegisterModuleKind("BatchNorm2d", func() Module { return &BatchNorm2d{} })
	RegisterModuleKind("MaxPool2d", func() Module { return &MaxPool2d{} })
	RegisterModuleKind("AdaptiveAvgPool2d", func() Module { return &AdaptiveAvgPool2d{} })
}

// Lowering selects how Conv2dOp and MaxPool2dOp build their computation.
type Lowering int

const (
	// LowerAuto picks LowerDecomposed on GoMLX's Go backend, whose
	// ConvGeneral and ReduceWindow are scalar loops (a ResNet-18 3×3
	// convolution runs 25-100× slower than as a matmul) and which cannot
	// differentiate ReduceWindow(max) (no SelectAndScatter), and
	// LowerNative on every other backend (XLA's convolutions and pools).
	LowerAuto Lowering = iota
	// LowerNative uses the backend's operators: graph.ConvGeneral
	// (NCHW input, OIHW kernel, PyTorch's layouts, no transposes) and
	// graph.BackendReduceWindow.
	LowerNative
	// LowerDecomposed builds the convolution as im2col (strided slices of
	// the zero-padded input) followed by one matmul with the [out,
	// in/groups·kh·kw] weight, and max pooling as the elementwise maximum
	// of the window's strided slices of the −∞-padded input: only
	// slices, pads, concatenations and matmuls, which every backend runs
	// (and differentiates) and the Go backend runs fast.
	LowerDecomposed
)

// String names the lowering.
func (l Lowering) String() string {
	switch l {
	case LowerAuto:
		return "auto"
	case LowerNative:
		return "native"
	case LowerDecomposed:
		return "decomposed"
	}
	return fmt.Sprintf("Lowering(%d)", int(l))
}

// resolve turns LowerAuto into the lowering for g's backend.
func (l Lowering) resolve(g *graph.Graph) Lowering {
	if l != LowerAuto {
		return l
	}
	if be := g.Backend(); be != nil && be.String() == gobackend.BackendName {
		return LowerDecomposed
	}
	return LowerNative
}

// ConvConfig holds the hyper-parameters of a 2-D convolution, per spatial
// axis (height, width), as torch.nn.functional.conv2d takes them.
type ConvConfig struct {
	Stride   [2]int // ≥ 1
	Padding  [2]int // zeros added on both sides of each axis, ≥ 0
	Dilation [2]int // ≥ 1
	Groups   int    // ≥ 1, dividing the input and output channels
	// Lowering selects the implementation (LowerAuto when zero).
	Lowering Lowering
}

// Conv2d is torch.nn.Conv2d (padding_mode "zeros"): input [N, C, H, W],
// weight [out, in/groups, kh, kw], optional bias [out], output [N, out,
// Ho, Wo] with Ho = ⌊(H + 2·pad − dil·(kh−1) − 1)/stride⌋ + 1.
type Conv2d struct {
	noChildren
	InChannels, OutChannels int
	KernelSize              [2]int
	Stride                  [2]int
	Padding                 [2]int
	Dilation                [2]int
	Groups                  int
	Bias                    bool
	// Lowering selects the implementation (LowerAuto when zero); not
	// printed.
	Lowering Lowering `json:",omitempty"`
	// WeightInit and BiasInit default to PyTorch's: kaiming_uniform with
	// a=√5 for the weight and U(±1/√fan_in) for the bias, both bounds
	// 1/√fan_in with fan_in = in/groups·kh·kw. They are not part of the
	// serialised configuration.
	WeightInit, BiasInit Init `json:"-"`
}

// NewConv2d returns torch.nn.Conv2d(in, out, kernel, stride, padding,
// dilation=1, groups=1, bias) with square kernel, stride and padding and
// PyTorch's default initialisation.
func NewConv2d(in, out, kernel, stride, padding int, bias bool) *Conv2d {
	return &Conv2d{InChannels: in, OutChannels: out, KernelSize: [2]int{kernel, kernel},
		Stride: [2]int{stride, stride}, Padding: [2]int{padding, padding}, Dilation: [2]int{1, 1}, Groups: 1, Bias: bias}
}

// Validate implements Validator.
func (l *Conv2d) Validate() error {
	if l.InChannels <= 0 || l.OutChannels <= 0 {
		return fmt.Errorf("Conv2d: in_channels %d and out_channels %d must be positive", l.InChannels, l.OutChannels)
	}
	if l.Groups <= 0 || l.InChannels%l.Groups != 0 || l.OutChannels%l.Groups != 0 {
		return fmt.Errorf("Conv2d: groups %d must be positive and divide in_channels %d and out_channels %d", l.Groups, l.InChannels, l.OutChannels)
	}
	for i := range 2 {
		if l.KernelSize[i] <= 0 || l.Stride[i] <= 0 || l.Dilation[i] <= 0 || l.Padding[i] < 0 {
			return fmt.Errorf("Conv2d: kernel_size %v, stride %v and dilation %v must be positive and padding %v non-negative",
				l.KernelSize, l.Stride, l.Dilation, l.Padding)
		}
	}
	return nil
}

// TypeName implements Module.
func (l *Conv2d) TypeName() string { return "Conv2d" }

// ExtraRepr implements Module, as torch's _ConvNd.extra_repr.
func (l *Conv2d) ExtraRepr() string {
	s := fmt.Sprintf("%d, %d, kernel_size=%s, stride=%s", l.InChannels, l.OutChannels, pyPair(l.KernelSize), pyPair(l.Stride))
	if l.Padding != [2]int{} {
		s += ", padding=" + pyPair(l.Padding)
	}
	if l.Dilation != [2]int{1, 1} {
		s += ", dilation=" + pyPair(l.Dilation)
	}
	if l.Groups != 1 {
		s += fmt.Sprintf(", groups=%d", l.Groups)
	}
	if !l.Bias {
		s += ", bias=False"
	}
	return s
}

func pyPair(p [2]int) string { return fmt.Sprintf("(%d, %d)", p[0], p[1]) }

// FanIn is in/groups·kh·kw, the fan-in of PyTorch's initialisers (the
// weight's size(1)·kh·kw).
func (l *Conv2d) FanIn() int {
	return l.InChannels / max(l.Groups, 1) * l.KernelSize[0] * l.KernelSize[1]
}

// FanOut is out·kh·kw, the fan-out torch's _calculate_fan_in_and_fan_out
// gives a conv weight (kaiming_normal_ with mode="fan_out" uses it).
func (l *Conv2d) FanOut() int { return l.OutChannels * l.KernelSize[0] * l.KernelSize[1] }

// Params implements Module.
func (l *Conv2d) Params() []ParamSpec {
	bound := 1 / math.Sqrt(float64(max(l.FanIn(), 1)))
	wi, bi := l.WeightInit, l.BiasInit
	if wi == nil {
		wi = Uniform(bound)
	}
	if bi == nil {
		bi = Uniform(bound)
	}
	ps := []ParamSpec{{Name: "weight", Shape: []int{l.OutChannels, l.InChannels / max(l.Groups, 1), l.KernelSize[0], l.KernelSize[1]}, Init: wi}}
	if l.Bias {
		ps = append(ps, ParamSpec{Name: "bias", Shape: []int{l.OutChannels}, Init: bi})
	}
	return ps
}

// Config returns the convolution's hyper-parameters for Conv2dOp.
func (l *Conv2d) Config() ConvConfig {
	return ConvConfig{Stride: l.Stride, Padding: l.Padding, Dilation: l.Dilation, Groups: l.Groups, Lowering: l.Lowering}
}

// Forward implements Leaf.
func (l *Conv2d) Forward(c *Call, args []any, _ map[string]any) (any, error) {
	x, err := TensorArg("Conv2d", args, 0)
	if err != nil {
		return nil, err
	}
	if d := x.Shape().Dimensions; len(d) != 4 || d[1] != l.InChannels {
		return nil, fmt.Errorf("Conv2d %s: input shape %v, want [N, %d, H, W]", c.Path, d, l.InChannels)
	}
	w, b, err := c.WeightAndBias(l.Bias)
	if err != nil {
		return nil, err
	}
	y, err := Conv2dOp(x, w, b, l.Config())
	if err != nil {
		return nil, fmt.Errorf("Conv2d %s: %w", c.Path, err)
	}
	return y, nil
}

// ConvOutputSize is PyTorch's output length of a convolution or pooling
// axis: ⌊(in + 2·pad − dil·(k−1) − 1)/stride⌋ + 1.
func ConvOutputSize(in, kernel, stride, padding, dilation int) int {
	return (in+2*padding-dilation*(kernel-1)-1)/stride + 1
}

// Conv2dOp is torch.nn.functional.conv2d: x [N, C, H, W], w [O, C/groups,
// kh, kw], b [O] or nil, giving [N, O, Ho, Wo]. Bad shapes or
// hyper-parameters are errors.
func Conv2dOp(x, w, b *graph.Node, cfg ConvConfig) (*graph.Node, error) {
	if cfg.Groups == 0 {
		cfg.Groups = 1
	}
	for i := range 2 {
		if cfg.Stride[i] == 0 {
			cfg.Stride[i] = 1
		}
		if cfg.Dilation[i] == 0 {
			cfg.Dilation[i] = 1
		}
		if cfg.Stride[i] < 0 || cfg.Dilation[i] < 0 || cfg.Padding[i] < 0 {
			return nil, fmt.Errorf("conv2d: stride %v, padding %v, dilation %v: want positive strides and dilations, non-negative padding", cfg.Stride, cfg.Padding, cfg.Dilation)
		}
	}
	if x.Rank() != 4 || w.Rank() != 4 {
		return nil, fmt.Errorf("conv2d: input %v and weight %v, want [N, C, H, W] and [O, C/groups, kh, kw]", x.Shape().Dimensions, w.Shape().Dimensions)
	}
	xd, wd := x.Shape().Dimensions, w.Shape().Dimensions
	c, o, g := xd[1], wd[0], cfg.Groups
	if g < 1 || c%g != 0 || o%g != 0 || wd[1] != c/g {
		return nil, fmt.Errorf("conv2d: input %v, weight %v, groups %d: want weight [O, C/groups, kh, kw] with groups dividing C and O", xd, wd, g)
	}
	var ho, wo int
	ho = ConvOutputSize(xd[2], wd[2], cfg.Stride[0], cfg.Padding[0], cfg.Dilation[0])
	wo = ConvOutputSize(xd[3], wd[3], cfg.Stride[1], cfg.Padding[1], cfg.Dilation[1])
	if ho <= 0 || wo <= 0 {
		return nil, fmt.Errorf("conv2d: input %v is smaller than the dilated kernel %v (padding %v, dilation %v)", xd, wd[2:], cfg.Padding, cfg.Dilation)
	}
	if b != nil && (b.Rank() != 1 || b.Shape().Dimensions[0] != o) {
		return nil, fmt.Errorf("conv2d: bias %v, want [%d]", b.Shape().Dimensions, o)
	}
	var y *graph.Node
	switch cfg.Lowering.resolve(x.Graph()) {
	case LowerNative:
		axes := compute.ConvolveAxesConfig{
			InputBatch: 0, InputChannels: 1, InputSpatial: []int{2, 3},
			KernelOutputChannels: 0, KernelInputChannels: 1, KernelSpatial: []int{2, 3},
			OutputBatch: 0, OutputChannels: 1, OutputSpatial: []int{2, 3},
		}
		pads := [][2]int{{cfg.Padding[0], cfg.Padding[0]}, {cfg.Padding[1], cfg.Padding[1]}}
		// graph.Convolve refuses strides and dilations together;
		// ConvGeneral takes both.
		y = graph.ConvGeneral(x, w, axes, cfg.Stride[:], pads, nil, cfg.Dilation[:], g, 1)
	case LowerDecomposed:
		y = conv2dIm2col(x, w, cfg, ho, wo)
	default:
		return nil, fmt.Errorf("conv2d: unknown lowering %v", cfg.Lowering)
	}
	if b != nil {
		y = graph.Add(y, graph.Reshape(b, 1, o, 1, 1))
	}
	return y, nil
}

// conv2dIm2col computes the convolution as a matmul: the input, channels
// first ([C, N, H, W]) and zero-padded, gives one strided slice [C, N, Ho,
// Wo] per kernel position; stacked after the channel axis they form the
// column matrix [C·kh·kw, N·Ho·Wo] (row index c·kh·kw + i·kw + j, the
// order of the weight's flattened [C/groups, kh, kw]), and
// W[O, C·kh·kw]·col is the output [O, N·Ho·Wo]. Groups are a batch axis of
// the matmul. (A batch-major layout — col [N, C·kh·kw, Ho·Wo] and a matmul
// batched over N — saves the two transposes but runs 2× slower on the Go
// backend at batch 8.)
func conv2dIm2col(x, w *graph.Node, cfg ConvConfig, ho, wo int) *graph.Node {
	xd, wd := x.Shape().Dimensions, w.Shape().Dimensions
	n, c, o, kh, kw, g := xd[0], xd[1], wd[0], wd[2], wd[3], cfg.Groups
	// Channels first: [C, N, H, W] (a reshape when N = 1).
	var xt *graph.Node
	if n == 1 {
		xt = graph.Reshape(x, c, 1, xd[2], xd[3])
	} else {
		xt = graph.Transpose(x, 0, 1)
	}
	xt = padSpatial(xt, graph.ScalarZero(x.Graph(), x.DType()), cfg.Padding)
	cols := windowSlices(xt, kh, kw, ho, wo, cfg.Stride, cfg.Dilation)
	var col *graph.Node
	if len(cols) == 1 {
		col = cols[0]
	} else {
		col = graph.Stack(cols, 1) // [C, kh·kw, N, Ho, Wo]
	}
	k := c / g * kh * kw
	var y *graph.Node
	if g == 1 {
		col = graph.Reshape(col, k, n*ho*wo)
		y = graph.DotGeneral(graph.Reshape(w, o, k), []int{1}, nil, col, []int{0}, nil) // [O, N·Ho·Wo]
	} else {
		col = graph.Reshape(col, g, k, n*ho*wo)
		y = graph.DotGeneral(graph.Reshape(w, g, o/g, k), []int{2}, []int{0}, col, []int{1}, []int{0}) // [G, O/G, N·Ho·Wo]
	}
	if n == 1 {
		return graph.Reshape(y, 1, o, ho, wo)
	}
	return graph.Transpose(graph.Reshape(y, o, n, ho, wo), 0, 1)
}

// windowSlices returns, for each kernel position (i, j) in row-major
// order, the strided slice of the (already padded) x [..., H, W] that the
// position meets over the Ho×Wo output grid: x[..., i·dh : : sh, j·dw : :
// sw] cut to Ho×Wo.
func windowSlices(x *graph.Node, kh, kw, ho, wo int, stride, dilation [2]int) []*graph.Node {
	r := x.Rank()
	out := make([]*graph.Node, 0, kh*kw)
	for i := range kh {
		for j := range kw {
			spec := make([]graph.SliceAxisSpec, r)
			for a := range r - 2 {
				spec[a] = graph.AxisRange()
			}
			h0, w0 := i*dilation[0], j*dilation[1]
			spec[r-2] = graph.AxisRange(h0, h0+stride[0]*(ho-1)+1).Stride(stride[0])
			spec[r-1] = graph.AxisRange(w0, w0+stride[1]*(wo-1)+1).Stride(stride[1])
			s := x
			if h0 != 0 || w0 != 0 || stride != [2]int{1, 1} || x.Shape().Dimensions[r-2] != ho || x.Shape().Dimensions[r-1] != wo {
				s = graph.Slice(x, spec...)
			}
			out = append(out, s)
		}
	}
	return out
}

// padSpatial pads the last two axes of x by pad[0] rows and pad[1]
// columns of fill (a scalar node) on both sides. It concatenates constant
// blocks rather than calling graph.Pad, which GoMLX cannot differentiate.
func padSpatial(x, fill *graph.Node, pad [2]int) *graph.Node {
	r := x.Rank()
	for a, p := range pad {
		if p == 0 {
			continue
		}
		axis := r - 2 + a
		dims := append([]int(nil), x.Shape().Dimensions...)
		dims[axis] = p
		block := graph.BroadcastToDims(fill, dims...)
		x = graph.Concatenate([]*graph.Node{block, x, block}, axis)
	}
	return x
}
