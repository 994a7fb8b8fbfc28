package execute

import (
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
)

// Runner runs a MaseGraph on inputs by name; Compiled, Eager and
// Segmented are Runners. The tensors Run returns are the caller's (free
// them with FinalizeAll when done); Close frees the runner's executables.
type Runner interface {
	Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error)
	InputNames() []string
	Close()
}

var (
	_ Runner = (*Compiled)(nil)
	_ Runner = (*Eager)(nil)
	_ Runner = (*Segmented)(nil)
)

// HasGraphBreaks reports whether g holds host nodes, which compiled mode
// must run between compiled segments.
func HasGraphBreaks(g *ir.Graph) bool {
	for _, n := range g.Nodes() {
		if isHostNode(n) {
			return true
		}
	}
	return false
}

// CompileRunner is compiled mode for any graph on the given backend: one
// computation (Compiled) when mg has no host nodes, Segmented otherwise.
func CompileRunner(be compute.Backend, mg *ir.MaseGraph, mode Mode) (Runner, error) {
	if HasGraphBreaks(mg.Graph) {
		return NewSegmentedOn(be, mg, mode)
	}
	return CompileOn(be, mg, mode, false)
}
