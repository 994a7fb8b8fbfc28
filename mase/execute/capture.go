package execute

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
)

// CaptureOn runs mg once on be a node at a time, host nodes (graph breaks)
// included, and returns every node's value as Compiled.RunCapture does:
// tensors for tensor nodes (the caller's, inputs as copies), Go constants
// for the rest, the output node's tensor or tuple. It is how metadata
// passes see a graph that compiled mode's host-kernel rewrites changed,
// which cannot run as one computation.
func CaptureOn(be compute.Backend, mg *ir.MaseGraph, inputs map[string]*tensors.Tensor) (map[*ir.Node]any, error) {
	s, err := newStaged(be, mg, Mode{}, func(nodes []*ir.Node) [][]*ir.Node {
		groups := make([][]*ir.Node, len(nodes))
		for i, n := range nodes {
			groups[i] = []*ir.Node{n}
		}
		return groups
	})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := checkNoExtraInputs(inputs, s.inputs); err != nil {
		return nil, err
	}
	vals := map[*ir.Node]any{}
	release := func() {
		for _, v := range vals {
			ForEachTensor(v, func(t *tensors.Tensor) { _ = t.FinalizeAll() })
		}
	}
	for _, p := range s.graph.Placeholders() {
		t, ok := inputs[p.Target]
		if !ok {
			release()
			return nil, fmt.Errorf("missing input %q (the graph takes %v)", p.Target, s.inputs)
		}
		c, err := t.Clone()
		if err != nil {
			release()
			return nil, fmt.Errorf("input %q: %w", p.Target, err)
		}
		vals[p] = c
	}
	stats := RunStats{Stages: len(s.stages), ExecutedNodes: map[string]int{}}
	for _, st := range s.stages {
		if err := s.runStage(st, vals, &stats, nil); err != nil {
			release()
			return nil, err
		}
	}
	if out := s.graph.OutputNode(); out != nil {
		vals[out] = resolveArg(out.Args()[0], vals)
	}
	return vals, nil
}
