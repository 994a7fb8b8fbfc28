package execute

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Runner runs a MaseGraph on inputs by name; Compiled and Eager are
// Runners.
type Runner interface {
	Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error)
	InputNames() []string
}

var (
	_ Runner = (*Compiled)(nil)
	_ Runner = (*Eager)(nil)
)

// Eager runs a MaseGraph node by node, the analog of PyTorch's eager mode:
// every node is its own small GoMLX executable (compiled the first time
// the node meets a set of input shapes, then cached), and every
// intermediate tensor is materialised between nodes. It gives the same
// outputs as Compiled; Lab 4 times the two against each other.
//
// Nodes whose value is a Go constant (shape arithmetic: size(), getattr
// shape) are evaluated once per input shapes and not executed.
type Eager struct {
	mg     *ir.Graph
	m      *nn.Model
	mode   Mode
	be     compute.Backend
	inputs []string

	mu    sync.Mutex
	nodes map[eagerKey]*eagerNode
}

// eagerKey identifies a node's executable: the node and its input signature.
type eagerKey struct {
	node *ir.Node
	sig  string
}

// eagerNode is the executable of one node for one input signature (the
// shapes of its tensor arguments and the values of its constant ones),
// with what its build produced.
type eagerNode struct {
	exec *model.Exec
	// shape is the node's value with every tensor replaced by its
	// outputIndex; nOutputs counts them (0: the value is a constant).
	shape    any
	nOutputs int
	built    bool
}

// outputIndex marks the place of the k-th flat output inside a value.
type outputIndex int

// NewEager prepares mg for eager execution with the parameters of m on
// the default backend.
func NewEager(m *nn.Model, mg *ir.Graph, mode Mode) (*Eager, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	return NewEagerOn(be, m, mg, mode)
}

// NewEagerOn is NewEager on a given backend.
func NewEagerOn(be compute.Backend, m *nn.Model, mg *ir.Graph, mode Mode) (*Eager, error) {
	if err := mg.Lint(); err != nil {
		return nil, err
	}
	e := &Eager{mg: mg, m: m, mode: mode, be: be, nodes: map[eagerKey]*eagerNode{}}
	for _, p := range mg.Placeholders() {
		e.inputs = append(e.inputs, p.Target)
	}
	if len(e.inputs) == 0 {
		return nil, fmt.Errorf("graph has no placeholder inputs")
	}
	return e, nil
}

// InputNames returns the graph's inputs.
func (e *Eager) InputNames() []string { return append([]string(nil), e.inputs...) }

// Run executes the graph node by node and returns the output tensors (one,
// or one per element of an output tuple).
func (e *Eager) Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	if err := checkNoExtraInputs(inputs, e.inputs); err != nil {
		return nil, err
	}
	vals := map[*ir.Node]any{}
	for _, n := range e.mg.Nodes() {
		switch n.Op {
		case ir.Placeholder:
			t, ok := inputs[n.Target]
			if !ok {
				return nil, fmt.Errorf("missing input %q (the graph takes %v)", n.Target, e.inputs)
			}
			vals[n] = t
		case ir.Output:
			out := resolveArg(n.Args()[0], vals)
			return flattenOutput(out)
		default:
			v, err := e.runNode(n, vals)
			if err != nil {
				return nil, fmt.Errorf("node %s (%s %s): %w", n.Name, n.Op, n.Target, err)
			}
			vals[n] = v
		}
	}
	return nil, fmt.Errorf("graph has no output node")
}

// flattenOutput turns the output node's value into its tensors.
func flattenOutput(v any) ([]*tensors.Tensor, error) {
	switch x := v.(type) {
	case *tensors.Tensor:
		return []*tensors.Tensor{x}, nil
	case []any:
		out := make([]*tensors.Tensor, len(x))
		for i, e := range x {
			t, ok := e.(*tensors.Tensor)
			if !ok {
				return nil, fmt.Errorf("output %d is %T, not a tensor", i, e)
			}
			out[i] = t
		}
		return out, nil
	}
	return nil, fmt.Errorf("graph output is %T, want a tensor or a tuple of tensors", v)
}

// tensorArgs collects the tensors inside the node's arguments (values of
// earlier nodes), in a fixed order, and the signature of their shapes.
func tensorArgs(n *ir.Node, vals map[*ir.Node]any) (ts []*tensors.Tensor, sig string) {
	var b strings.Builder
	seen := map[*tensors.Tensor]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case *tensors.Tensor:
			if !seen[x] {
				seen[x] = true
				ts = append(ts, x)
				b.WriteString(x.Shape().String())
				b.WriteByte(';')
			}
		case []any:
			b.WriteByte('(')
			for _, e := range x {
				walk(e)
			}
			b.WriteByte(')')
		default:
			fmt.Fprintf(&b, "%v;", x)
		}
	}
	for _, in := range n.Inputs() {
		walk(vals[in])
	}
	return ts, b.String()
}

// runNode evaluates one node on the materialised values of its inputs.
func (e *Eager) runNode(n *ir.Node, vals map[*ir.Node]any) (any, error) {
	ins, sig := tensorArgs(n, vals)
	en, err := e.executable(n, sig, vals)
	if err != nil {
		return nil, err
	}
	if en.built && en.nOutputs == 0 {
		return en.shape, nil // a constant: nothing to execute
	}
	args := make([]any, len(ins))
	for i, t := range ins {
		args[i] = t
	}
	if len(args) == 0 {
		args = []any{tensors.FromScalar(float32(0))}
	}
	outs, err := en.exec.Call(args...)
	if err != nil {
		return nil, err
	}
	if !en.built {
		return nil, fmt.Errorf("internal error: the node's executable was not built")
	}
	if en.nOutputs == 0 {
		return en.shape, nil
	}
	if len(outs) < en.nOutputs {
		return nil, fmt.Errorf("got %d outputs, want %d", len(outs), en.nOutputs)
	}
	return fillOutputs(en.shape, outs), nil
}

// mapLeaves returns v with every leaf (anything but a []any tuple,
// which is copied element by element) replaced by f(leaf).
func mapLeaves(v any, f func(leaf any) any) any {
	if x, ok := v.([]any); ok {
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapLeaves(e, f)
		}
		return out
	}
	return f(v)
}

// fillOutputs replaces every outputIndex in shape by its tensor.
func fillOutputs(shape any, outs []*tensors.Tensor) any {
	return mapLeaves(shape, func(leaf any) any {
		if k, ok := leaf.(outputIndex); ok {
			return outs[k]
		}
		return leaf
	})
}

// executable returns the executable of node n for input signature sig,
// creating it on first use. Its graph function lowers the node with one
// graph parameter per input tensor (in tensorArgs order), the constant
// arguments as they are in vals, and returns the tensors of its value.
func (e *Eager) executable(n *ir.Node, sig string, vals map[*ir.Node]any) (*eagerNode, error) {
	key := eagerKey{n, sig}
	e.mu.Lock()
	defer e.mu.Unlock()
	if en, ok := e.nodes[key]; ok {
		return en, nil
	}
	en := &eagerNode{}
	inputVals := map[*ir.Node]any{}
	for _, in := range n.Inputs() {
		inputVals[in] = vals[in]
	}
	fn := func(scope *model.Scope, params []*graph.Node) []*graph.Node {
		g := params[0].Graph()
		k := 0
		bound := map[*tensors.Tensor]*graph.Node{}
		toGraph := func(leaf any) any {
			x, ok := leaf.(*tensors.Tensor)
			if !ok {
				return leaf
			}
			if p, ok := bound[x]; ok {
				return p
			}
			p := params[k]
			k++
			bound[x] = p
			return p
		}
		gvals := Values{}
		for _, in := range n.Inputs() {
			gvals[in] = mapLeaves(inputVals[in], toGraph)
		}
		v, err := lowerNode(g, scope, e.m, n, gvals, nil, e.mode)
		if err != nil {
			panic(err)
		}
		var outs []*graph.Node
		en.shape = mapLeaves(v, func(leaf any) any {
			x, ok := leaf.(*graph.Node)
			if !ok {
				return leaf
			}
			outs = append(outs, x)
			return outputIndex(len(outs) - 1)
		})
		en.nOutputs, en.built = len(outs), true
		if len(outs) == 0 {
			// A constant: the graph still needs an output; the value is
			// taken from the build, never from the execution.
			outs = append(outs, graph.Scalar(g, dtypes.Float32, 0))
		}
		return outs
	}
	exec, err := model.NewExec(e.be, e.m.Store, fn)
	if err != nil {
		return nil, fmt.Errorf("creating the node's executor: %w", err)
	}
	en.exec = exec
	e.nodes[key] = en
	return en, nil
}
