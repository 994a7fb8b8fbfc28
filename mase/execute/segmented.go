package execute

import (
	"github.com/gomlx/compute"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
)

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
