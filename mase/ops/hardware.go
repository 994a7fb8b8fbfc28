package ops

import "slices"

// HardwareComponent is the rtl/ library component that implements a
// mase_op in hardware (MASE's INTERNAL_COMP): the hardware metadata pass
// names it in each node's metadata and the emitter instantiates it.
type HardwareComponent struct {
	// Module is the SystemVerilog module.
	Module string
	// Files are the rtl/*.sv files the module needs, dependencies first.
	Files []string
}

// hardwareComponents is the table's hardware column, by mase_op.
var hardwareComponents = map[string]HardwareComponent{
	"linear":     {"fixed_linear", []string{"fixed_cast.sv", "fixed_dot_product.sv", "skid_buffer.sv", "fixed_param_source.sv", "fixed_linear.sv"}},
	"relu":       {"fixed_relu", []string{"fixed_cast.sv", "fixed_relu.sv"}},
	"leaky_relu": {"fixed_leaky_relu", []string{"fixed_cast.sv", "fixed_leaky_relu.sv"}},
}

// Hardware returns the component of a mase_op, if the hardware library
// has one. Its Files are the caller's to change.
func Hardware(maseOp string) (HardwareComponent, bool) {
	c, ok := hardwareComponents[maseOp]
	c.Files = slices.Clone(c.Files)
	return c, ok
}

// HardwareOps lists the mase_op values the hardware library supports,
// sorted.
func HardwareOps() []string {
	out := make([]string, 0, len(hardwareComponents))
	for k := range hardwareComponents {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
