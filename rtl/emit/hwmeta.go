package emit

import (
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
)

// FixedConfig is the quantize pass config of the hardware lab
// (configs/tests/quantize/fixed.toml): every Linear to fixed point
// Q(width, frac) for data in, weight, bias and data out, floor rounding.
func FixedConfig(width, frac int) passes.QuantizeArgs {
	cfg := map[string]any{"name": "fixed", "floor": true}
	for _, k := range []string{"data_in", "weight", "bias", "data_out"} {
		cfg[k+"_width"], cfg[k+"_frac_width"] = width, frac
	}
	return passes.QuantizeByType("linear", cfg)
}

// QuantizeFixed runs the quantize pass with FixedConfig and then, as the
// lab notebook does, forces every tensor argument and result of every node
// to fixed [width, frac] (the ReLU and the implicit nodes included).
// AddCommonMetadata must have run.
func QuantizeFixed(mg *ir.MaseGraph, width, frac int) error {
	if width < 2 || width > 32 || frac < 0 || frac >= width {
		return fmt.Errorf("emit: fixed point width %d, frac width %d: want 2 <= width <= 32 and 0 <= frac < width", width, frac)
	}
	if _, _, err := passes.QuantizeTransform(mg, FixedConfig(width, frac)); err != nil {
		return err
	}
	for _, n := range mg.Nodes() {
		if n.Meta == nil {
			return fmt.Errorf("emit: node %s has no metadata (run AddCommonMetadata first)", n.Name)
		}
		for _, m := range []*ir.ArgMap{n.Meta.Common.Args, n.Meta.Common.Results} {
			for _, k := range m.Keys() {
				if a := m.Get(k); a.Shape != nil && a.Precision != nil {
					a.Type, a.Precision = "fixed", []int{width, frac}
				}
			}
		}
	}
	return nil
}

// PrepareOptions configure Prepare.
type PrepareOptions struct {
	// DummyIn holds one tensor per traced input (shapes only matter).
	DummyIn map[string]*tensors.Tensor
	// Width and Frac are the fixed-point format of every tensor (the
	// lab's 8, 3 when both are 0).
	Width, Frac int
	// Parallelism is the max parallelism of every dimension (0: the lab's 4).
	Parallelism int
}

// Prepare runs the lab's pass sequence (spec §8.1) on model: trace,
// InitMetadata, AddCommonMetadata, QuantizeFixed and AddHardwareMetadata,
// returning a graph ready for Verilog.
func Prepare(model *nn.Model, opts PrepareOptions) (*ir.MaseGraph, error) {
	if opts.Width == 0 && opts.Frac == 0 {
		opts.Width, opts.Frac = 8, 3
	}
	mg, err := mase.NewMaseGraph(model, nil)
	if err != nil {
		return nil, err
	}
	if _, _, err := passes.InitMetadata(mg); err != nil {
		return nil, err
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: opts.DummyIn}); err != nil {
		return nil, err
	}
	if err := QuantizeFixed(mg, opts.Width, opts.Frac); err != nil {
		return nil, err
	}
	if _, _, err := passes.AddHardwareMetadata(mg, passes.HardwareArgs{Parallelism: opts.Parallelism}); err != nil {
		return nil, err
	}
	return mg, nil
}

// LabInput is the hardware lab's dummy input for the MLP: x of shape
// [1, 2, 2] (spec §8.2's first beat, 0.375, 0.75, 0, 0.125).
func LabInput() map[string]*tensors.Tensor {
	return map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions([]float32{0.375, 0.75, 0, 0.125}, 1, 2, 2)}
}
