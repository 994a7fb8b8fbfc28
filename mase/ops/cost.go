package ops

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Costs: what one node of the table computes and moves, worked out from the
// shapes and dtypes in its common metadata (passes.AddCommonMetadata) and
// its constant arguments.
//
// Two FLOP counts are kept apart:
//
//   - FLOPs counts as PyTorch's torch.utils.flop_counter.FlopCounterMode
//     does: only matmul-like operators (mm, bmm, addmm, linear, matmul with
//     batch dimensions, convolutions, scaled_dot_product_attention), a
//     multiply-add being 2 FLOPs. A bias add is not counted (addmm counts as
//     its mm), nor is anything else.
//   - ElementwiseFLOPs counts the rest: element-wise arithmetic,
//     activations, softmax, normalisations, pooling, quantisation. Each
//     entry states its convention; an elementary scalar operation (add,
//     multiply, compare, exp, erf, tanh, sqrt) is 1.
//
// Bytes read are the bytes of every tensor the node reads (its tensor
// arguments, and a module's parameters and buffers), bytes written those of
// the tensors it returns, each at its dtype's size (bits/8). Views and
// no-ops move nothing: 0 FLOPs and 0 bytes. Intermediates inside one op (an
// attention's score matrix) are not counted: the op is taken as one kernel.

// Class says what an entry does to memory.
type Class uint8

const (
	// ClassCompute reads its inputs and writes new tensors (the default).
	ClassCompute Class = iota
	// ClassView returns a new view of its input: a reshape, permute,
	// transpose, slice or shape query, which PyTorch runs with no kernel.
	// Eager mode folds these into the stage of their producer
	// (IsView). It costs nothing.
	ClassView
	// ClassNoOp returns its input unchanged (Identity). It costs nothing.
	ClassNoOp
	// ClassEvalNoOp is a no-op in eval mode and computes in train mode
	// (dropout).
	ClassEvalNoOp
)

// String names the class: compute, view, no_op, eval_no_op.
func (c Class) String() string {
	switch c {
	case ClassCompute:
		return "compute"
	case ClassView:
		return "view"
	case ClassNoOp:
		return "no_op"
	case ClassEvalNoOp:
		return "eval_no_op"
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// In resolves a table class for a mode: ClassEvalNoOp is ClassNoOp in eval
// mode and ClassCompute in train mode; other classes are themselves.
func (c Class) In(training bool) Class {
	if c != ClassEvalNoOp {
		return c
	}
	if training {
		return ClassCompute
	}
	return ClassNoOp
}

// Cost is what one node computes and moves.
type Cost struct {
	// FLOPs counts matmul-like work as FlopCounterMode does (a
	// multiply-add is 2).
	FLOPs int64 `json:"flops"`
	// ElementwiseFLOPs counts everything else (element-wise ops,
	// reductions, softmax, normalisation), by each entry's convention.
	ElementwiseFLOPs int64 `json:"elementwise_flops"`
	// BytesRead and BytesWritten are the tensors read and written.
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
}

// Bytes is BytesRead + BytesWritten.
func (c Cost) Bytes() int64 { return c.BytesRead + c.BytesWritten }

// Add returns c + d.
func (c Cost) Add(d Cost) Cost {
	return Cost{c.FLOPs + d.FLOPs, c.ElementwiseFLOPs + d.ElementwiseFLOPs, c.BytesRead + d.BytesRead, c.BytesWritten + d.BytesWritten}
}

// CostFunc computes the cost of one node of an entry.
type CostFunc func(in CostInput) (Cost, error)

// Operand is a tensor a node reads or writes, as its common metadata
// records it.
type Operand struct {
	// Name is the metadata name: data_in_0, data_out_0, weight, ...
	Name  string
	Shape []int
	// DType is the element type (float32, int32, ...).
	DType string
}

// Elements is the number of elements.
func (o Operand) Elements() int64 { return numel(o.Shape) }

// Bytes is the tensor's size: Elements × the dtype's bits / 8, rounded up.
func (o Operand) Bytes() int64 {
	bits := dtypeBits(o.DType)
	return (o.Elements()*int64(bits) + 7) / 8
}

// Last is the size of the last axis (1 for a scalar).
func (o Operand) Last() int64 {
	if len(o.Shape) == 0 {
		return 1
	}
	return int64(o.Shape[len(o.Shape)-1])
}

// CostInput is what a cost function sees of a node.
type CostInput struct {
	// Node is the node (its target and constant arguments).
	Node *ir.Node
	// Module is the module a call_module node calls; nil otherwise.
	Module nn.Module
	// Args and Kwargs are the node's arguments with every node replaced
	// by its value as the metadata records it: an *Operand for a tensor,
	// the recorded constant otherwise (nil when not recorded).
	Args   []any
	Kwargs map[string]any
	// Inputs are the tensors among Args and Kwargs, in order (positional
	// arguments, then keywords sorted): the metadata's data_in_0, ...
	Inputs []Operand
	// Params are a module's parameters and buffers: weight, bias,
	// running_mean, packed words, ...
	Params []Operand
	// Outputs are the tensors the node returns: data_out_0, ...
	Outputs []Operand
	// Training is the mode the graph runs in.
	Training bool
}

// Arg returns positional argument i as a tensor, or nil when it is absent
// or not a tensor.
func (in CostInput) Arg(i int) *Operand {
	if i < 0 || i >= len(in.Args) {
		return nil
	}
	o, _ := in.Args[i].(*Operand)
	return o
}

// Kwarg returns keyword k as a tensor, or nil.
func (in CostInput) Kwarg(k string) *Operand {
	o, _ := in.Kwargs[k].(*Operand)
	return o
}

// Param returns the parameter or buffer name, or nil.
func (in CostInput) Param(name string) *Operand {
	for i := range in.Params {
		if in.Params[i].Name == name {
			return &in.Params[i]
		}
	}
	return nil
}

// Out returns the first output, or an error naming the node.
func (in CostInput) Out() (Operand, error) {
	if len(in.Outputs) == 0 {
		return Operand{}, fmt.Errorf("node %s: no tensor result in its common metadata (run AddCommonMetadata first)", in.name())
	}
	return in.Outputs[0], nil
}

// In returns tensor input i, or an error naming the node.
func (in CostInput) In(i int) (Operand, error) {
	if i >= len(in.Inputs) {
		return Operand{}, fmt.Errorf("node %s: %d tensor inputs in its common metadata, want at least %d (run AddCommonMetadata first)", in.name(), len(in.Inputs), i+1)
	}
	return in.Inputs[i], nil
}

// firstAndOut returns tensor input 0 and the result, or an error naming
// the node.
func (in CostInput) firstAndOut() (Operand, Operand, error) {
	x, err := in.In(0)
	if err != nil {
		return Operand{}, Operand{}, err
	}
	o, err := in.Out()
	return x, o, err
}

func (in CostInput) name() string {
	if in.Node == nil {
		return "?"
	}
	return in.Node.Name
}

// moved is the bytes part of a cost: every input, parameter and buffer
// read, every output written.
func (in CostInput) moved() Cost {
	var c Cost
	for _, o := range in.Inputs {
		c.BytesRead += o.Bytes()
	}
	for _, o := range in.Params {
		c.BytesRead += o.Bytes()
	}
	for _, o := range in.Outputs {
		c.BytesWritten += o.Bytes()
	}
	return c
}

// NodeCost is one node's cost with its class.
type NodeCost struct {
	Cost
	// Class is the node's effective class: compute, view or no_op
	// (ClassEvalNoOp resolved for the mode). Placeholders, get_attr and
	// output nodes run nothing and are no_op, and so is a compute node
	// whose cost function finds nothing computed or moved (to() to the
	// tensor's own dtype, arithmetic on shape values).
	Class Class
	// Unknown is set when the node's table entry has no cost function (an
	// operator added with Register without one): FLOPs are 0 and bytes are
	// its tensors read and written.
	Unknown bool
}

// NodeCostOf computes the cost of node n of mg from its common metadata
// (passes.AddCommonMetadata must have run) in the given mode. A
// call_module node is costed by its class's entry; a module class outside
// the table that declares its operator (OpTyper: quantised and packed
// Linears, LoRALinear, QEmbeddingPacked) by the entry of the class with
// that operator (linear → Linear, embedding → Embedding).
func NodeCostOf(mg *ir.MaseGraph, n *ir.Node, training bool) (NodeCost, error) {
	switch n.Op {
	case ir.Placeholder, ir.GetAttr, ir.Output:
		return NodeCost{Class: ClassNoOp}, nil
	}
	if n.Meta == nil {
		return NodeCost{}, fmt.Errorf("node %s has no metadata: run InitMetadata and AddCommonMetadata first", n.Name)
	}
	var mod nn.Module
	var entry Op
	var ok bool
	switch n.Op {
	case ir.CallModule:
		if mg == nil || mg.Model == nil {
			return NodeCost{}, fmt.Errorf("node %s calls module %q: the graph has no model", n.Name, n.Target)
		}
		mod, ok = mg.Model.Module(n.Target)
		if !ok {
			return NodeCost{}, fmt.Errorf("node %s calls module %q, which the model does not have", n.Name, n.Target)
		}
		entry, ok = moduleEntry(mod)
		if !ok {
			return NodeCost{}, fmt.Errorf("node %s: module %s (class %s) has no cost: its class is not in the table (known: %s) and declares no operator the table has",
				n.Name, n.Target, mod.TypeName(), strings.Join(Names(ir.CallModule, false), ", "))
		}
	default:
		entry, ok = Lookup(n.Op, n.Target)
		if !ok {
			return NodeCost{}, Unknown(n.Op, n.Target)
		}
	}
	class := entry.Class.In(training)
	if class != ClassCompute {
		return NodeCost{Class: class}, nil
	}
	in, err := costInput(mg, n, mod, training)
	if err != nil {
		return NodeCost{}, err
	}
	if entry.Cost == nil {
		return NodeCost{Cost: in.moved(), Class: class, Unknown: true}, nil
	}
	c, err := entry.Cost(in)
	if err != nil {
		return NodeCost{}, err
	}
	if c == (Cost{}) {
		// Nothing computed or moved: to() to the tensor's own dtype,
		// arithmetic on shape values.
		class = ClassNoOp
	}
	return NodeCost{Cost: c, Class: class}, nil
}

// moduleEntry finds the entry of a module: its class, or the first class
// (by name) whose operator the module declares.
func moduleEntry(mod nn.Module) (Op, bool) {
	if e, ok := Lookup(ir.CallModule, mod.TypeName()); ok {
		return e, true
	}
	t, ok := mod.(OpTyper)
	if !ok {
		return Op{}, false
	}
	_, op := t.MaseOp()
	for _, class := range Names(ir.CallModule, false) {
		if e, _ := Lookup(ir.CallModule, class); e.MaseOp == op {
			return e, true
		}
	}
	return Op{}, false
}

// costInput gathers what a cost function sees of n.
func costInput(mg *ir.MaseGraph, n *ir.Node, mod nn.Module, training bool) (CostInput, error) {
	in := CostInput{Node: n, Module: mod, Training: training, Kwargs: map[string]any{}}
	var collect func(v any) any
	collect = func(v any) any {
		switch x := v.(type) {
		case *ir.Node:
			val, err := nodeValue(x)
			if err != nil {
				return nil
			}
			if o, ok := val.(*Operand); ok {
				in.Inputs = append(in.Inputs, *o)
			}
			return val
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = collect(e)
			}
			return out
		}
		return v
	}
	for _, a := range n.Args() {
		in.Args = append(in.Args, collect(a))
	}
	kw := n.Kwargs()
	for _, k := range sortedNames(kw) {
		in.Kwargs[k] = collect(kw[k])
	}
	c := n.Meta.Common
	for _, k := range c.Results.Keys() {
		if r := c.Results.Get(k); r.DType != "" {
			in.Outputs = append(in.Outputs, Operand{Name: k, Shape: r.Shape, DType: r.DType})
		}
	}
	for _, k := range c.Args.Keys() {
		if a := c.Args.Get(k); a.IsParam {
			in.Params = append(in.Params, Operand{Name: k, Shape: a.Shape, DType: dtypeOf(a)})
		}
	}
	if mod != nil && mg != nil && mg.Model != nil {
		prefix := n.Target + "."
		for _, b := range mg.Model.Buffers() {
			name, ok := strings.CutPrefix(b.Name, prefix)
			if !ok || in.Param(name) != nil {
				continue
			}
			s := b.Variable.Shape()
			in.Params = append(in.Params, Operand{Name: name, Shape: slices.Clone(s.Dimensions), DType: strings.ToLower(s.DType.String())})
		}
	}
	return in, nil
}

// nodeValue is a node's value as its common metadata records it: an
// *Operand for a tensor, the recorded constant otherwise.
func nodeValue(p *ir.Node) (any, error) {
	if p.Meta == nil || p.Meta.Common.Results == nil {
		return nil, fmt.Errorf("node %s has no common metadata", p.Name)
	}
	r := p.Meta.Common.Results
	if r.Len() == 1 {
		if d := r.Get(r.Keys()[0]); d.DType != "" {
			return &Operand{Name: p.Name, Shape: d.Shape, DType: d.DType}, nil
		}
	}
	if r.Len() == 1 {
		return r.Get(r.Keys()[0]).Value, nil
	}
	out := make([]any, 0, r.Len())
	for _, k := range r.Keys() {
		d := r.Get(k)
		if d.DType != "" {
			out = append(out, &Operand{Name: p.Name, Shape: d.Shape, DType: d.DType})
		} else {
			out = append(out, d.Value)
		}
	}
	return out, nil
}

// dtypeOf is an argument's dtype: the recorded one, or float<bits> from
// its precision.
func dtypeOf(a *ir.ArgInfo) string {
	if a.DType != "" {
		return a.DType
	}
	if len(a.Precision) > 0 {
		return fmt.Sprintf("float%d", a.Precision[0])
	}
	return "float32"
}

// dtypeBitsByName maps lower-case dtype names (float32, bfloat16, int8,
// bool, ...) to bits per element.
var dtypeBitsByName = sync.OnceValue(func() map[string]int {
	m := map[string]int{"bool": 8} // one byte per element, as torch.bool and Go's bool
	for _, dt := range []dtypes.DType{dtypes.Int8, dtypes.Int16, dtypes.Int32, dtypes.Int64, dtypes.Uint8, dtypes.Uint16,
		dtypes.Uint32, dtypes.Uint64, dtypes.Float16, dtypes.BFloat16, dtypes.Float32, dtypes.Float64, dtypes.Complex64, dtypes.Complex128} {
		m[strings.ToLower(dt.String())] = dt.Bits()
	}
	return m
})

// dtypeBits is the bits per element of a dtype name; 32 when unknown.
func dtypeBits(name string) int {
	if b, ok := dtypeBitsByName()[strings.ToLower(name)]; ok {
		return b
	}
	return 32
}

func numel(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// CostClasses lists every entry's class by kind and target, for tests and
// documentation.
func CostClasses() map[ir.OpKind]map[string]Class {
	builtins()
	mu.RLock()
	defer mu.RUnlock()
	out := map[ir.OpKind]map[string]Class{}
	for k, op := range table {
		if out[k.kind] == nil {
			out[k.kind] = map[string]Class{}
		}
		out[k.kind][k.target] = op.Class
	}
	return out
}

// ---- The built-in cost functions ----
