// Package execute runs a MaseGraph on a GoMLX backend.
//
// Build lowers every node of an ir.Graph, in order, to GoMLX graph
// operations: call_module nodes call the leaf module's Forward with its
// parameters from the model's store (through the model's parametrizations,
// after its forward pre-hooks); call_function and call_method nodes
// use the operator table (package ops). Compiled (see Compiled) turns the
// whole MaseGraph into one GoMLX computation, JIT-compiled once per input
// shape.
package execute

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

// Mode selects train or eval behaviour (dropout).
type Mode struct {
	// Training enables dropout (and dropout_p of attention).
	Training bool
}

// Values maps each MaseGraph node to its lowered value: a *graph.Node for
// tensors, or a Go constant (int, []any tuple, ...) for shape arithmetic.
type Values map[*ir.Node]any

// Build lowers mg into the GoMLX graph g. scope is the model store's root
// scope (parameters are read from it); inputs holds one graph node per
// placeholder, by name. It returns every node's value; the caller reads the
// output node's.
func Build(g *graph.Graph, scope *model.Scope, mg *ir.MaseGraph, inputs map[string]*graph.Node, mode Mode) (vals Values, err error) {
	defer func() {
		// GoMLX reports shape errors while building by panicking.
		if r := recover(); r != nil {
			err = fmt.Errorf("building the computation: %v", r)
		}
	}()
	vals = Values{}
	for _, n := range mg.Graph.Nodes() {
		v, err := lowerNode(g, scope, mg.Model, n, vals, inputs, mode, nil)
		if err != nil {
			return nil, fmt.Errorf("node %s (%s %s): %w", n.Name, n.Op, n.Target, err)
		}
		vals[n] = v
	}
	return vals, nil
}

// lowerNode lowers one node. params, when not nil, holds a call_module
// node's parameters and buffers by name (nn.Call.Params), read from the
// store otherwise.
func lowerNode(g *graph.Graph, scope *model.Scope, m *nn.Model, n *ir.Node, vals Values, inputs map[string]*graph.Node, mode Mode, params map[string]*graph.Node) (any, error) {
	resolve := func(v any) any { return resolveArg(v, vals) }
	args := make([]any, 0, len(n.Args()))
	for _, a := range n.Args() {
		args = append(args, resolve(a))
	}
	kwargs := map[string]any{}
	for k, v := range n.Kwargs() {
		kwargs[k] = resolve(v)
	}
	switch n.Op {
	case ir.Placeholder:
		x, ok := inputs[n.Target]
		if !ok {
			return nil, fmt.Errorf("no value given for input %q", n.Target)
		}
		return x, nil
	case ir.Output:
		return args[0], nil
	case ir.GetAttr:
		v := m.Store.GetVariable(nn.StorePath(n.Target))
		if v == nil {
			return nil, fmt.Errorf("model has no attribute %q", n.Target)
		}
		return v.NodeValue(g), nil
	case ir.CallModule:
		mod, ok := m.Module(n.Target)
		if !ok {
			return nil, fmt.Errorf("model has no module %q", n.Target)
		}
		leaf, ok := mod.(nn.Leaf)
		if !ok {
			return nil, fmt.Errorf("module %q (%s) is not a leaf module", n.Target, mod.TypeName())
		}
		// Forward runs the module's forward pre-hooks first; c.Param
		// applies its parameters' parametrizations (nn/parametrize.go).
		c := newCall(g, scopeAt(scope, n.Target), n.Target, m, mode)
		c.Params = params
		return c.Forward(leaf, args, kwargs)
	case ir.CallFunction, ir.CallMethod:
		op, ok := ops.Lookup(n.Op, n.Target)
		if !ok {
			return nil, ops.Unknown(n.Op, n.Target)
		}
		if op.Lower == nil {
			return nil, ops.HostOnlyError(n.Target)
		}
		return op.Lower(newCall(g, scope, "", m, mode), args, kwargs)
	}
	return nil, fmt.Errorf("unknown node kind %q", n.Op)
}

// newCall is the context of one module, function or method lowering; in
// train mode it draws random numbers (dropout) from the model store.
func newCall(g *graph.Graph, scope *model.Scope, path string, m *nn.Model, mode Mode) *nn.Call {
	c := &nn.Call{Graph: g, Scope: scope, Path: path, Training: mode.Training, Model: m}
	if mode.Training {
		store := scope.Store()
		c.Random = func(dims ...int) *graph.Node {
			return store.RandomUniform(g, shapes.Make(dtypes.Float32, dims...))
		}
	}
	return c
}

// scopeAt returns the scope of a dotted module path.
func scopeAt(root *model.Scope, path string) *model.Scope {
	return root.Store().Scope(nn.StorePath(path))
}

// resolveArg replaces MaseGraph nodes inside an argument by their values.
func resolveArg(v any, vals Values) any {
	return ir.MapNodes(v, func(n *ir.Node) any { return vals[n] })
}
