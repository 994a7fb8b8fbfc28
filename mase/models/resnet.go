package models

import (
	"fmt"
	"math"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// ResNetConfig sizes a torchvision ResNet built from BasicBlocks.
type ResNetConfig struct {
	// Layers is the number of BasicBlocks in layer1 … layer4 ([2, 2, 2, 2]
	// for ResNet-18, [3, 4, 6, 3] for ResNet-34).
	Layers [4]int `json:"layers"`
	// NumClasses is the width of the fc head (1000 for ImageNet).
	NumClasses int `json:"num_classes"`
}

// ResNet18Config is torchvision's resnet18: [2, 2, 2, 2] BasicBlocks,
// 1000 classes.
func ResNet18Config() ResNetConfig { return ResNetConfig{Layers: [4]int{2, 2, 2, 2}, NumClasses: 1000} }

// Validate checks the config and names the first bad field: blocks per
// stage within limits.ResNetBlocks, num_classes within limits.NumLabels,
// and the parameters (NumParameters) within limits.MaxModelBytes and the
// memory available.
func (c ResNetConfig) Validate() error {
	for i, n := range c.Layers {
		if n <= 0 {
			return fmt.Errorf("resnet config: layers[%d] = %d, every stage needs at least one block", i, n)
		}
		if err := limits.ResNetBlocks.CheckAs(fmt.Sprintf("layers[%d]", i), n); err != nil {
			return fmt.Errorf("resnet config: %w", err)
		}
	}
	if c.NumClasses <= 0 {
		return fmt.Errorf("resnet config: num_classes must be positive, got %d", c.NumClasses)
	}
	if err := limits.NumLabels.CheckAs("num_classes", c.NumClasses); err != nil {
		return fmt.Errorf("resnet config: %w", err)
	}
	n := c.NumParameters()
	if err := limits.ModelBytes(fmt.Sprintf("the model (%d float32 parameters)", n), 4*n); err != nil {
		return fmt.Errorf("resnet config: %w", err)
	}
	return nil
}

// NumParameters is the number of parameters of the ResNet the config
// builds (11,689,512 for ResNet-18 with 1000 classes); exact for a config
// within its bounds.
func (c ResNetConfig) NumParameters() int64 {
	n := int64(3*64*7*7 + 2*64) // conv1, bn1
	in := int64(64)
	for stage, blocks := range c.Layers {
		out := int64(64) << stage
		for b := 0; b < blocks; b++ {
			n += in*out*9 + 2*out + out*out*9 + 2*out // conv1, bn1, conv2, bn2
			if b == 0 && stage > 0 {
				n += in*out + 2*out // downsample: 1×1 conv, BatchNorm
			}
			in = out
		}
	}
	return n + 512*int64(c.NumClasses) + int64(c.NumClasses) // fc
}

// ResNet is the root module of torchvision.models.ResNet with BasicBlocks,
// with torchvision's module tree and parameter names: conv1, bn1, relu,
// maxpool, layer1 … layer4 (Sequential of BasicBlock: conv1, bn1, relu,
// conv2, bn2 and, in the first block of layer2 … layer4, downsample =
// Sequential(1×1 Conv2d with stride 2, BatchNorm2d)), avgpool, fc. It
// takes images x [N, 3, H, W] (ImageNet: 224×224) and returns logits [N,
// NumClasses].
type ResNet struct {
	nn.Container
	Config ResNetConfig
}

// NewResNet18 builds torchvision's resnet18 with numClasses outputs
// (11,689,512 parameters for 1000 classes), seeded.
func NewResNet18(numClasses int, seed uint64) (*nn.Model, error) {
	cfg := ResNet18Config()
	cfg.NumClasses = numClasses
	return NewResNet(cfg, seed)
}

// NewResNet builds a BasicBlock ResNet with torchvision's initialisation:
// kaiming_normal_(mode="fan_out", nonlinearity="relu") for every conv
// weight (N(0, 2/(out·kh·kw))), BatchNorm weight 1 and bias 0 (running
// statistics 0 and 1), and PyTorch's default U(±1/√in) for fc
// (zero_init_residual=False).
func NewResNet(cfg ResNetConfig, seed uint64) (*nn.Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	conv := func(in, out, kernel, stride, padding int) *nn.Conv2d {
		c := nn.NewConv2d(in, out, kernel, stride, padding, false)
		c.WeightInit = nn.Normal(math.Sqrt(2 / float64(c.FanOut())))
		return c
	}
	seq := func(typ string, kids ...nn.Named) *nn.Container { return &nn.Container{Type: typ, Kids: kids} }
	named := func(name string, m nn.Module) nn.Named { return nn.Named{Name: name, Module: m} }

	kids := []nn.Named{
		named("conv1", conv(3, 64, 7, 2, 3)),
		named("bn1", nn.NewBatchNorm2d(64)),
		named("relu", nn.NewReLUInplace()),
		named("maxpool", nn.NewMaxPool2d(3, 2, 1)),
	}
	in := 64
	for stage, blocks := range cfg.Layers {
		out := 64 << stage
		stride := 1
		if stage > 0 {
			stride = 2
		}
		var layer []nn.Named
		for b := range blocks {
			s := 1
			if b == 0 {
				s = stride
			}
			block := []nn.Named{
				named("conv1", conv(in, out, 3, s, 1)),
				named("bn1", nn.NewBatchNorm2d(out)),
				named("relu", nn.NewReLUInplace()),
				named("conv2", conv(out, out, 3, 1, 1)),
				named("bn2", nn.NewBatchNorm2d(out)),
			}
			if s != 1 || in != out {
				block = append(block, named("downsample", seq("Sequential",
					named("0", conv(in, out, 1, s, 0)),
					named("1", nn.NewBatchNorm2d(out)))))
			}
			layer = append(layer, named(fmt.Sprint(b), seq("BasicBlock", block...)))
			in = out
		}
		kids = append(kids, named(fmt.Sprintf("layer%d", stage+1), seq("Sequential", layer...)))
	}
	kids = append(kids,
		named("avgpool", nn.NewAdaptiveAvgPool2d(1, 1)),
		named("fc", nn.NewLinear(in, cfg.NumClasses, true)))
	root := &ResNet{Config: cfg, Container: nn.Container{Type: "ResNet", Kids: kids}}
	return nn.NewModel(root, seed)
}

// InputNames implements trace.Forwarder: the image batch x.
func (r *ResNet) InputNames() []string { return []string{"x"} }

// DefaultInputs implements trace.Forwarder.
func (r *ResNet) DefaultInputs() []string { return []string{"x"} }

// Forward implements trace.Forwarder, recording torchvision's
// ResNet._forward_impl as torch.fx traces it: a call_module node per
// module call (each block's relu twice: layer1_0_relu, layer1_0_relu_1),
// the residual `out += identity` as call_function add, and
// torch.flatten(x, 1) as call_function flatten.
func (r *ResNet) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	x := in["x"]
	if x == nil {
		return fmt.Errorf("ResNet needs input x")
	}
	x = t.Module("conv1", x)
	x = t.Module("bn1", x)
	x = t.Module("relu", x)
	x = t.Module("maxpool", x)
	for stage, blocks := range r.Config.Layers {
		for b := range blocks {
			p := fmt.Sprintf("layer%d.%d.", stage+1, b)
			identity := x
			out := t.Module(p+"conv1", x)
			out = t.Module(p+"bn1", out)
			out = t.Module(p+"relu", out)
			out = t.Module(p+"conv2", out)
			out = t.Module(p+"bn2", out)
			if _, ok := t.Model.Module(p + "downsample"); ok {
				identity = t.Module(p+"downsample.1", t.Module(p+"downsample.0", x))
			}
			out = t.Fn("add", out, identity)
			x = t.Module(p+"relu", out)
		}
	}
	x = t.Module("avgpool", x)
	x = t.Fn("flatten", x, 1)
	t.Output(t.Module("fc", x))
	return nil
}
