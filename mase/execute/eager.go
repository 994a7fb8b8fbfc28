package execute

import (
	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
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

// Eager runs a MaseGraph node by node, the analog of PyTorch's eager mode:
// every node is its own small GoMLX executable (compiled the first time
// the node meets a set of input shapes, then cached), and every
// intermediate tensor is materialised between nodes. Host nodes (see
// ops.HostKernel) run as Go code. It gives the same outputs as Compiled;
// Lab 4 times the two against each other.
//
// Nodes whose value is a Go constant (shape arithmetic: size(), getattr
// shape) are evaluated once per input shapes and not executed.
type Eager struct{ *staged }

// NewEager prepares mg for eager execution with its model's parameters
// on the default backend.
func NewEager(mg *ir.MaseGraph, mode Mode) (*Eager, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	return NewEagerOn(be, mg, mode)
}

// NewEagerOn is NewEager on a given backend.
func NewEagerOn(be compute.Backend, mg *ir.MaseGraph, mode Mode) (*Eager, error) {
	s, err := newStaged(be, mg, mode, func(nodes []*ir.Node) [][]*ir.Node {
		groups := make([][]*ir.Node, len(nodes))
		for i, n := range nodes {
			groups[i] = []*ir.Node{n}
		}
		return groups
	})
	if err != nil {
		return nil, err
	}
	return &Eager{s}, nil
}

// Segmented is compiled mode for a graph with graph breaks: every run of
// consecutive nodes between host nodes (see ops.HostKernel) is one GoMLX
// executable, JIT-compiled once per input shapes like Compiled, and each
// host node runs as Go code on the tensors materialised at its boundary.
// Without host nodes it is one segment, the whole graph.
type Segmented struct{ *staged }

// NewSegmented prepares mg for segmented compiled execution with its
// model's parameters on the default backend.
func NewSegmented(mg *ir.MaseGraph, mode Mode) (*Segmented, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	return NewSegmentedOn(be, mg, mode)
}

// NewSegmentedOn is NewSegmented on a given backend.
func NewSegmentedOn(be compute.Backend, mg *ir.MaseGraph, mode Mode) (*Segmented, error) {
	s, err := newStaged(be, mg, mode, func(nodes []*ir.Node) [][]*ir.Node {
		var groups [][]*ir.Node
		var run []*ir.Node
		for _, n := range nodes {
			if !isHostNode(n) {
				run = append(run, n)
				continue
			}
			if len(run) > 0 {
				groups = append(groups, run)
				run = nil
			}
			groups = append(groups, []*ir.Node{n})
		}
		if len(run) > 0 {
			groups = append(groups, run)
		}
		return groups
	})
	if err != nil {
		return nil, err
	}
	return &Segmented{s}, nil
}

// Segments returns the number of compiled segments and of host nodes.
func (s *Segmented) Segments() (compiled, host int) {
	for _, st := range s.stages {
		if st.host != nil {
			host++
		} else {
			compiled++
		}
	}
	return compiled, host
}

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
