// Package trace turns a model's forward into a MaseGraph.
//
// A model's root module implements Forwarder: its Forward is ordinary Go
// code that calls the Tracer for every operation (a leaf module call, a
// function, a method on a value). Each call appends one node to the graph,
// exactly as torch.fx's symbolic tracing records a PyTorch forward: leaf
// modules become call_module nodes named after their path, functions and
// methods become call_function / call_method nodes (add, add_1, ...).
// Optional inputs change what the forward records, as MASE's
// hf_input_names do.
package trace

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

// Forwarder is a model root whose forward can be traced.
type Forwarder interface {
	// InputNames lists every input the forward accepts, in order.
	InputNames() []string
	// DefaultInputs are the inputs traced when none are named
	// (HuggingFace: input_ids only).
	DefaultInputs() []string
	// Forward records the forward pass for the given inputs (a subset of
	// InputNames, in that order).
	Forward(t *Tracer, inputs map[string]*ir.Node) error
}

// Tracer records operations into a graph.
type Tracer struct {
	// Graph is the graph being built.
	Graph *ir.Graph
	// Model is the module tree calls refer to.
	Model *nn.Model
	// counters numbers modules created during forward (crossentropyloss_0).
	counters map[string]int
}

// Trace records m's forward with the named inputs (nil: its defaults) and
// returns the graph. Unknown input names are rejected with the allowed ones.
func Trace(m *nn.Model, inputNames []string) (*ir.Graph, error) {
	f, ok := m.Root.(Forwarder)
	if !ok {
		return nil, fmt.Errorf("model %s cannot be traced: its root does not implement trace.Forwarder", m.Root.TypeName())
	}
	if inputNames == nil {
		inputNames = f.DefaultInputs()
	}
	allowed := f.InputNames()
	for _, n := range inputNames {
		if !slices.Contains(allowed, n) {
			return nil, fmt.Errorf("unknown input %q for %s (allowed: %s)", n, m.Root.TypeName(), strings.Join(allowed, ", "))
		}
	}
	t := &Tracer{Graph: ir.New(), Model: m, counters: map[string]int{}}
	inputs := map[string]*ir.Node{}
	for _, name := range allowed { // placeholders in signature order
		if slices.Contains(inputNames, name) {
			inputs[name] = t.Graph.MustAddNode(ir.Placeholder, name, name, nil, nil)
		}
	}
	if err := t.run(func() error { return f.Forward(t, inputs) }); err != nil {
		return nil, err
	}
	if t.Graph.OutputNode() == nil {
		return nil, fmt.Errorf("tracing %s: forward recorded no output", m.Root.TypeName())
	}
	if err := t.Graph.Lint(); err != nil {
		return nil, fmt.Errorf("tracing %s produced a bad graph: %w", m.Root.TypeName(), err)
	}
	return t.Graph, nil
}

// traceError carries an error out of a forward through panic.
type traceError struct{ err error }

func (t *Tracer) run(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			te, ok := r.(traceError)
			if !ok {
				panic(r)
			}
			err = te.err
		}
	}()
	return fn()
}

func (t *Tracer) fail(format string, args ...any) {
	panic(traceError{fmt.Errorf(format, args...)})
}

// Module records a call of the leaf module at path.
func (t *Tracer) Module(path string, args ...any) *ir.Node {
	return t.ModuleKw(path, args, nil)
}

// ModuleKw records a call of the leaf module at path with keyword arguments.
func (t *Tracer) ModuleKw(path string, args []any, kwargs map[string]any) *ir.Node {
	mod, ok := t.Model.Module(path)
	if !ok {
		t.fail("forward calls module %q, which the model does not have", path)
	}
	if _, leaf := mod.(nn.Leaf); !leaf {
		t.fail("forward calls module %q (%s), which is not a leaf module", path, mod.TypeName())
	}
	return t.add(ir.CallModule, path, path, args, kwargs)
}

// NewModule registers a module created during forward (HF's
// `loss_fct = CrossEntropyLoss()`) under fx's name: its class in lower case
// with a counter (crossentropyloss_0), and records its call.
func (t *Tracer) NewModule(mod nn.Leaf, args ...any) *ir.Node {
	base := strings.ToLower(mod.TypeName())
	path := fmt.Sprintf("%s_%d", base, t.counters[base])
	t.counters[base]++
	if existing, ok := t.Model.Module(path); ok {
		if existing.TypeName() != mod.TypeName() {
			t.fail("module path %q already holds a %s", path, existing.TypeName())
		}
	} else if err := t.Model.AddModule(path, mod, 0); err != nil {
		t.fail("registering %s: %v", path, err)
	}
	return t.add(ir.CallModule, path, path, args, nil)
}

// Fn records a call_function node; name must be in the operator table
// (package ops).
func (t *Tracer) Fn(name string, args ...any) *ir.Node { return t.FnKw(name, args, nil) }

// FnKw records a call_function node with keyword arguments.
func (t *Tracer) FnKw(name string, args []any, kwargs map[string]any) *ir.Node {
	t.known(ir.CallFunction, name)
	return t.add(ir.CallFunction, name, name, args, kwargs)
}

// Method records a call_method node: self.name(args...); name must be in
// the operator table.
func (t *Tracer) Method(name string, self *ir.Node, args ...any) *ir.Node {
	t.known(ir.CallMethod, name)
	return t.add(ir.CallMethod, name, name, append([]any{self}, args...), nil)
}

// known stops the trace at a function or method no one can run, rather
// than at the first execution.
func (t *Tracer) known(kind ir.OpKind, name string) {
	if _, ok := ops.Lookup(kind, name); !ok {
		t.fail("forward calls %v", ops.Unknown(kind, name))
	}
}

// Output records the output node; several values become a tuple.
func (t *Tracer) Output(values ...any) {
	var arg any
	if len(values) == 1 {
		arg = values[0]
	} else {
		arg = values
	}
	t.add(ir.Output, "output", "output", []any{arg}, nil)
}

func (t *Tracer) add(op ir.OpKind, name, target string, args []any, kwargs map[string]any) *ir.Node {
	n, err := t.Graph.AddNode(op, name, target, args, kwargs)
	if err != nil {
		t.fail("tracing: %v", err)
	}
	return n
}

// NewMaseGraph traces model with the given inputs (nil: the model's
// defaults; for HuggingFace models that is input_ids only, as in MASE) and
// returns the graph with its model. Package mase re-exports it.
func NewMaseGraph(model *nn.Model, inputNames []string) (*ir.MaseGraph, error) {
	g, err := Trace(model, inputNames)
	if err != nil {
		return nil, err
	}
	if inputNames == nil {
		for _, p := range g.Placeholders() {
			inputNames = append(inputNames, p.Target)
		}
	}
	return &ir.MaseGraph{Graph: g, Model: model, InputNames: inputNames}, nil
}
