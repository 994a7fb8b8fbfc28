// Package mase is gomase's user-facing API: MaseGraph, the traced model that
// passes analyse and transform, draw and execute — the Go counterpart of
// chop's MaseGraph.
//
//	model, _ := models.NewBertTiny(42)
//	mg, _ := mase.NewMaseGraph(model, nil)          // input_ids only, as MASE
//	mg, _, _ = passes.InitMetadata(mg)
//	draw.Graph(mg, "")                              // package mase/ui/draw; inline under GoNB
package mase

import (
	"fmt"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// MaseGraph is a model traced into the MaseGraph IR, with the model's
// modules and parameters beside it.
type MaseGraph struct {
	// Graph is the IR (MASE's mg.fx_graph).
	Graph *ir.Graph
	// Model holds the module tree and parameters (MASE's mg.model).
	Model *nn.Model
	// InputNames are the traced inputs (MASE's hf_input_names).
	InputNames []string
}

// NewMaseGraph traces model with the given inputs (nil: the model's
// defaults; for HuggingFace models that is input_ids only, as in MASE).
func NewMaseGraph(model *nn.Model, inputNames []string) (*MaseGraph, error) {
	g, err := trace.Trace(model, inputNames)
	if err != nil {
		return nil, err
	}
	if inputNames == nil {
		for _, p := range g.Placeholders() {
			inputNames = append(inputNames, p.Target)
		}
	}
	return &MaseGraph{Graph: g, Model: model, InputNames: inputNames}, nil
}

// Nodes returns the graph's nodes in order (MASE's mg.fx_graph.nodes).
func (mg *MaseGraph) Nodes() []*ir.Node { return mg.Graph.Nodes() }

// Modules returns every module by dotted path (MASE's mg.modules).
func (mg *MaseGraph) Modules() map[string]nn.Module {
	out := map[string]nn.Module{}
	for _, nm := range mg.Model.Modules() {
		out[nm.Path] = nm.Module
	}
	return out
}

// Module returns the module a call_module node calls.
func (mg *MaseGraph) Module(n *ir.Node) (nn.Module, error) {
	if n.Op != ir.CallModule {
		return nil, fmt.Errorf("node %s is a %s node, not call_module", n.Name, n.Op)
	}
	m, ok := mg.Model.Module(n.Target)
	if !ok {
		return nil, fmt.Errorf("node %s calls module %q, which the model does not have", n.Name, n.Target)
	}
	return m, nil
}

// Run executes the graph in eval mode (compiled: one GoMLX computation,
// freed after the call) and returns its outputs, which are the caller's.
func (mg *MaseGraph) Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	c, err := execute.Compile(mg.Model, mg.Graph, execute.Mode{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Run(inputs)
}

// Summary counts nodes by kind, e.g. "82 nodes: 2 placeholder, 40 call_module, ...".
func (mg *MaseGraph) Summary() string {
	counts := map[ir.OpKind]int{}
	for _, n := range mg.Graph.Nodes() {
		counts[n.Op]++
	}
	var parts []string
	for _, k := range []ir.OpKind{ir.Placeholder, ir.GetAttr, ir.CallModule, ir.CallFunction, ir.CallMethod, ir.Output} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return fmt.Sprintf("%d nodes: %s", mg.Graph.Len(), strings.Join(parts, ", "))
}
