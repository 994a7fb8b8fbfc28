package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

// Validation of a graph file on import, whatever its checksum says (a
// version 1 file has none; AcceptEdited ignores it; a file could be
// re-sealed by hand). The file is checked in two steps:
//
//   - validateDoc, before anything is allocated: the model is a registry
//     model, the input names are identifiers, every parameter shape the
//     module list declares has dimensions within limits.ModuleDim and
//     their bytes, with the replaced modules' buffers, are within
//     limits.MaxModelBytes and the memory available; each replaced
//     module's configuration passes its Validate (sizes, dropout
//     probabilities, eps) and matches the module list. The registry
//     model's own configuration is validated by models.NewFromConfig
//     (BertConfig.Validate, ...) before it is built.
//   - validateNode, as the graph is rebuilt on the model: each node's kind
//     and target (placeholders are the input names in order, get_attr
//     reads a parameter or buffer, call_module calls a leaf module of the
//     model, functions and methods are in the operator table), and its
//     arguments, through ops.CheckCall: earlier nodes only, of the types
//     the operator takes, dropout probabilities in [0, 1).
//
// The parameters must then match the rebuilt model exactly (names, shapes
// and dtypes: LoadState without conversions), and the graph lint: a DAG
// with one output, last.

// validateDoc checks a decoded graph file before anything is built.
func validateDoc(doc *graphDoc) error {
	if !slices.Contains(models.Names(), doc.Model.Name) {
		return fmt.Errorf("model.name %q is not a registry model (allowed: %s)", doc.Model.Name, strings.Join(models.Names(), ", "))
	}
	if len(doc.InputNames) == 0 {
		return fmt.Errorf("input_names is empty (allowed: the model's input names, such as input_ids or x)")
	}
	for i, name := range doc.InputNames {
		if !isIdentifier(name) {
			return fmt.Errorf("input_names[%d] %q is not an input name (allowed: letters, digits and '_', not starting with a digit)", i, name)
		}
		if slices.Contains(doc.InputNames[:i], name) {
			return fmt.Errorf("input_names lists %q twice", name)
		}
	}
	if len(doc.Nodes) == 0 {
		return fmt.Errorf("the graph has no nodes (allowed: placeholders, calls and one output)")
	}
	declared := map[string]moduleDoc{}
	var elements int64
	for _, md := range doc.Modules {
		if _, dup := declared[md.Path]; dup {
			return fmt.Errorf("modules lists %q twice", md.Path)
		}
		declared[md.Path] = md
		for _, p := range md.Params {
			n, err := shapeElements(fmt.Sprintf("module %s parameter %s", md.Path, p.Name), p.Shape)
			if err != nil {
				return err
			}
			var ok bool
			if elements, ok = limits.Add(elements, n); !ok {
				return fmt.Errorf("the modules' parameters hold more than 2^63 elements")
			}
		}
	}
	for i, r := range doc.Replaced {
		mod, err := nn.DecodeModule(r.Kind, r.Config)
		if err != nil {
			return fmt.Errorf("replaced module %s: %w", r.Path, err)
		}
		md, ok := declared[r.Path]
		if !ok {
			return fmt.Errorf("replaced module %s is not in the module list", r.Path)
		}
		got := moduleTree1(nn.NamedModule{Path: r.Path, Module: mod})
		if describeModule(got) != describeModule(md) {
			return fmt.Errorf("replaced module %s is %s, the module list says %s", r.Path, describeModule(got), describeModule(md))
		}
		if slices.ContainsFunc(doc.Replaced[:i], func(o replacedDoc) bool { return o.Path == r.Path }) {
			return fmt.Errorf("replaced lists module %s twice", r.Path)
		}
		// Module-declared buffers (packed weights) are not in the module
		// list: count them too.
		if bd, ok := mod.(nn.BufferDeclarer); ok {
			for _, b := range bd.BufferSpecs() {
				n, err := shapeElements(fmt.Sprintf("replaced module %s buffer %s", r.Path, b.Name), b.Shape)
				if err != nil {
					return err
				}
				if elements, ok = limits.Add(elements, n); !ok {
					return fmt.Errorf("the modules' parameters hold more than 2^63 elements")
				}
			}
		}
	}
	bytes, ok := limits.Mul(elements, 4)
	if !ok {
		return fmt.Errorf("the modules' parameters hold more than 2^61 elements")
	}
	if err := limits.ModelBytes(fmt.Sprintf("the model the module list describes (%d float32 values)", elements), bytes); err != nil {
		return err
	}
	for _, list := range []struct {
		what  string
		names []string
	}{{"frozen_parameters", doc.Frozen}, {"buffers", doc.Buffers}} {
		for i, name := range list.names {
			if slices.Contains(list.names[:i], name) {
				return fmt.Errorf("%s lists %q twice", list.what, name)
			}
		}
	}
	return nil
}

// shapeElements checks a declared shape (rank within
// limits.MaxTensorDims, each dimension within limits.ModuleDim) and
// returns its number of elements.
func shapeElements(what string, shape []int) (int64, error) {
	if len(shape) > limits.MaxTensorDims {
		return 0, fmt.Errorf("%s has %d dimensions (allowed: at most %d)", what, len(shape), limits.MaxTensorDims)
	}
	n := int64(1)
	for i, d := range shape {
		if err := limits.ModuleDim.CheckAs(fmt.Sprintf("%s dimension %d:", what, i), d); err != nil {
			return 0, err
		}
		var ok bool
		if n, ok = limits.Mul(n, int64(d)); !ok {
			return 0, fmt.Errorf("%s shape %v holds more than 2^63 elements", what, shape)
		}
	}
	return n, nil
}

// isIdentifier reports whether s is a Python identifier in ASCII: what fx
// names inputs and nodes.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// nodeChecker validates the nodes of a graph as they are rebuilt on m.
type nodeChecker struct {
	m          *nn.Model
	inputNames []string
	tensors    map[string]bool // parameters and buffers: what get_attr may read
	kinds      map[*ir.Node]ops.Kind
	inputs     int // placeholders seen
}

func newNodeChecker(m *nn.Model, inputNames []string) *nodeChecker {
	c := &nodeChecker{m: m, inputNames: inputNames, tensors: map[string]bool{}, kinds: map[*ir.Node]ops.Kind{}}
	for _, p := range m.Parameters() {
		c.tensors[p.Name] = true
	}
	for _, b := range m.Buffers() {
		c.tensors[b.Name] = true
	}
	return c
}

// check validates one node, added to the graph after every node before it.
func (c *nodeChecker) check(n *ir.Node) error {
	noArgs := func() error {
		if len(n.Args()) > 0 || len(n.Kwargs()) > 0 {
			return fmt.Errorf("a %s node takes no arguments, this one has %s %s", n.Op, ir.FormatArgs(n.Args()), ir.FormatKwargs(n.Kwargs()))
		}
		return nil
	}
	kind := ops.KindTensor
	switch n.Op {
	case ir.Placeholder:
		if c.inputs >= len(c.inputNames) || n.Target != c.inputNames[c.inputs] {
			want := "no more placeholders"
			if c.inputs < len(c.inputNames) {
				want = fmt.Sprintf("input %q", c.inputNames[c.inputs])
			}
			return fmt.Errorf("placeholder for %q, but input_names %v call for %s here", n.Target, c.inputNames, want)
		}
		c.inputs++
		if err := noArgs(); err != nil {
			return err
		}
	case ir.GetAttr:
		if !c.tensors[n.Target] {
			return fmt.Errorf("get_attr target %q is not a parameter or buffer of the model (allowed: one of its %d parameters and buffers, e.g. %s)",
				n.Target, len(c.tensors), someNames(c.tensors))
		}
		if err := noArgs(); err != nil {
			return err
		}
	case ir.CallModule:
		mod, ok := c.m.Module(n.Target)
		if !ok {
			return fmt.Errorf("call_module target %q is not a module of the model (allowed: its leaf modules, e.g. %s)", n.Target, c.someLeaves())
		}
		if _, leaf := mod.(nn.Leaf); !leaf {
			return fmt.Errorf("call_module target %q is a %s, which cannot be called (allowed: a leaf module, e.g. %s)", n.Target, mod.TypeName(), c.someLeaves())
		}
		fallthrough
	case ir.CallFunction, ir.CallMethod:
		k, err := ops.CheckCall(n, func(in *ir.Node) ops.Kind { return c.kinds[in] })
		if err != nil {
			return err
		}
		kind = k
	case ir.Output:
		if n.Target != "output" || len(n.Args()) != 1 || len(n.Kwargs()) > 0 {
			return fmt.Errorf("the output node must have target \"output\" and one argument, the graph's result; this one has target %q and %s %s",
				n.Target, ir.FormatArgs(n.Args()), ir.FormatKwargs(n.Kwargs()))
		}
	}
	c.kinds[n] = kind
	return nil
}

// finish checks the graph as a whole once every node is in.
func (c *nodeChecker) finish() error {
	if c.inputs != len(c.inputNames) {
		return fmt.Errorf("the graph has %d placeholders for the %d input_names %v", c.inputs, len(c.inputNames), c.inputNames)
	}
	return nil
}

// someLeaves names a few leaf modules of the model, for errors.
func (c *nodeChecker) someLeaves() string {
	leaves := map[string]bool{}
	for _, nm := range c.m.Modules() {
		if _, ok := nm.Module.(nn.Leaf); ok && nm.Path != "" {
			leaves[nm.Path] = true
		}
	}
	return someNames(leaves)
}

// someNames lists up to three names of a set, sorted, then how many more.
func someNames(set map[string]bool) string {
	names := sortedKeys(set)
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
