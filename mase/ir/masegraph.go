package ir

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/nn"
)

// MaseGraph is a model traced into a Graph, with the model's modules and
// parameters beside it: torch.fx's GraphModule, MASE's MaseGraph. Passes,
// the executors and the compiled-mode rewrites take it; package mase's
// NewMaseGraph traces one.
type MaseGraph struct {
	// Graph is the IR (MASE's mg.fx_graph).
	Graph *Graph
	// Model holds the module tree and parameters (MASE's mg.model).
	Model *nn.Model
	// InputNames are the traced inputs (MASE's hf_input_names).
	InputNames []string
}

// Nodes returns the graph's nodes in order (MASE's mg.fx_graph.nodes).
func (mg *MaseGraph) Nodes() []*Node { return mg.Graph.Nodes() }

// Modules returns every module by dotted path (MASE's mg.modules).
func (mg *MaseGraph) Modules() map[string]nn.Module {
	out := map[string]nn.Module{}
	for _, nm := range mg.Model.Modules() {
		out[nm.Path] = nm.Module
	}
	return out
}

// Module returns the module a call_module node calls.
func (mg *MaseGraph) Module(n *Node) (nn.Module, error) {
	if n.Op != CallModule {
		return nil, fmt.Errorf("node %s is a %s node, not call_module", n.Name, n.Op)
	}
	m, ok := mg.Model.Module(n.Target)
	if !ok {
		return nil, fmt.Errorf("node %s calls module %q, which the model does not have", n.Name, n.Target)
	}
	return m, nil
}

// Summary counts nodes by kind, e.g. "82 nodes: 2 placeholder, 40 call_module, ...".
func (mg *MaseGraph) Summary() string {
	counts := map[OpKind]int{}
	for _, n := range mg.Graph.Nodes() {
		counts[n.Op]++
	}
	var parts []string
	for _, k := range []OpKind{Placeholder, GetAttr, CallModule, CallFunction, CallMethod, Output} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("%d nodes: %s", mg.Graph.Len(), strings.Join(parts, ", "))
}
