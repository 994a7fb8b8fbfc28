package compileopt

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn/packed"
	"github.com/gomase/gomase/mase/ops"
)

// sdpaKernel swaps every scaled_dot_product_attention call that the fused
// kernel can run (not causal: the kernel can, the GoMLX lowering cannot
// yet, so causal calls are left to fail the same way in both modes) for
// the host function. When q, k and v are each a head split
// (permute(x, 0, 2, 1, 3) used only by the attention) and the result's
// only use is the head merge (the same permute), the kernel reads the
// split projections and writes the merged layout in place (seq_major):
// the four transposes around each attention leave the graph.
func sdpaKernel(mg *ir.MaseGraph) (int, error) {
	g := mg.Graph
	changed := 0
	for _, n := range g.Nodes() {
		if n.Op != ir.CallFunction || n.Target != "scaled_dot_product_attention" {
			continue
		}
		if causal, _ := n.Kwarg("is_causal"); causal == true {
			continue
		}
		if len(n.Args()) != 3 {
			continue // q, k, v passed some other way: leave it
		}
		kwargs := map[string]any{}
		for _, k := range []string{"attn_mask", "scale"} {
			if v, ok := n.Kwarg(k); ok && v != nil {
				kwargs[k] = v
			}
		}
		args := n.Args()
		splits, merge := headTransposes(n)
		if merge != nil {
			for i, p := range splits {
				args[i] = p.Arg(0)
			}
			kwargs["seq_major"] = true
		}
		repl, err := replaceNode(g, n, ir.CallFunction, ops.HostSDPA, args, kwargs)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", n.Name, err)
		}
		if merge != nil {
			if _, err := merge.ReplaceAllUsesWith(repl); err != nil {
				return changed, fmt.Errorf("%s: %w", n.Name, err)
			}
			for _, p := range append(splits, merge) {
				if err := g.EraseNode(p); err != nil {
					return changed, fmt.Errorf("%s: %w", n.Name, err)
				}
			}
		}
		changed++
	}
	return changed, nil
}

// headTransposes returns the head splits feeding attention node n (its q,
// k and v, each a swap of axes 1 and 2 of a rank-4 tensor that only n
// reads) and the head merge reading its result (its only user, the same
// swap), or a nil merge when the pattern is not all there.
func headTransposes(n *ir.Node) (splits []*ir.Node, merge *ir.Node) {
	for _, a := range n.Args() {
		p, ok := a.(*ir.Node)
		if !ok || !isHeadTranspose(p) || p.NumUsers() != 1 {
			return nil, nil
		}
		splits = append(splits, p)
	}
	users := n.Users()
	if len(users) != 1 || !isHeadTranspose(users[0]) || users[0].Arg(0) != any(n) {
		return nil, nil
	}
	return splits, users[0]
}

// isHeadTranspose reports whether n is x.permute(0, 2, 1, 3) (as a method
// call, with the dims as arguments or as one list): the swap of heads and
// sequence of a rank-4 tensor.
func isHeadTranspose(n *ir.Node) bool {
	if n.Op != ir.CallMethod || n.Target != "permute" {
		return false
	}
	dims := n.Args()[1:]
	if len(dims) == 1 {
		if list, ok := dims[0].([]any); ok {
			dims = list
		}
	}
	want := []int{0, 2, 1, 3}
	if len(dims) != len(want) {
		return false
	}
	for i, d := range dims {
		if v, ok := d.(int); !ok || v != want[i] {
			return false
		}
	}
	return len(n.Kwargs()) == 0
}

// geluKernel swaps exact GELU (the modules GELU and GELUActivation, the
// gelu function without approximate="tanh") for the host function.
func geluKernel(mg *ir.MaseGraph) (int, error) {
	m, g := mg.Model, mg.Graph
	changed := 0
	for _, n := range g.Nodes() {
		isGELU := false
		switch n.Op {
		case ir.CallModule:
			if mod, ok := m.Module(n.Target); ok {
				isGELU = mod.TypeName() == "GELU" || mod.TypeName() == "GELUActivation"
			}
		case ir.CallFunction:
			if n.Target == "gelu" {
				approx, _ := n.Kwarg("approximate")
				isGELU = approx == nil || strings.EqualFold(fmt.Sprint(approx), "none")
			}
		}
		if !isGELU || len(n.Args()) != 1 {
			continue
		}
		if _, ok := n.Arg(0).(*ir.Node); !ok {
			continue
		}
		if _, err := replaceNode(g, n, ir.CallFunction, ops.HostGELU, n.Args(), nil); err != nil {
			return changed, fmt.Errorf("%s: %w", n.Name, err)
		}
		changed++
	}
	return changed, nil
}

// mxint8Kernel replaces each QLinearPacked call by F.linear on weights
// (and bias) dequantised on the host from the module's packed buffers.
// The buffer reads and the dequantisations depend on parameters only, so
// they are inserted after the graph's inputs, every buffer read first and
// then every dequantisation: one graph break at the start of the graph
// instead of one per layer.
func mxint8Kernel(mg *ir.MaseGraph) (int, error) {
	m, g := mg.Model, mg.Graph
	ph := g.Placeholders()
	if len(ph) == 0 {
		return 0, fmt.Errorf("graph has no inputs")
	}
	type packedParam struct {
		layer  *ir.Node
		param  string
		numel  int
		shape  []any
		group  int
		mw, ew *ir.Node // the buffer reads
		out    *ir.Node // the dequantised tensor
	}
	var params []*packedParam
	for _, n := range g.Nodes() {
		if n.Op != ir.CallModule || len(n.Args()) != 1 {
			continue
		}
		mod, _ := m.Module(n.Target)
		l, ok := mod.(*packed.Linear)
		if !ok {
			continue
		}
		params = append(params, &packedParam{layer: n, param: "weight", numel: l.OutFeatures * l.InFeatures,
			shape: []any{l.OutFeatures, l.InFeatures}, group: l.GroupSize})
		if l.Bias {
			params = append(params, &packedParam{layer: n, param: "bias", numel: l.OutFeatures, shape: []any{l.OutFeatures}, group: l.GroupSize})
		}
	}
	if len(params) == 0 {
		return 0, nil
	}
	// Inserting after the last input, in order: the buffer reads, then the
	// dequantisations.
	err := g.InsertingAfter(ph[len(ph)-1], func() error {
		for _, p := range params {
			base := ir.SanitizeName(p.layer.Target + "." + p.param)
			var err error
			if p.mw, err = g.AddNode(ir.GetAttr, base+packed.MantissasSuffix, p.layer.Target+"."+p.param+packed.MantissasSuffix, nil, nil); err != nil {
				return err
			}
			if p.ew, err = g.AddNode(ir.GetAttr, base+packed.ExponentsSuffix, p.layer.Target+"."+p.param+packed.ExponentsSuffix, nil, nil); err != nil {
				return err
			}
		}
		for _, p := range params {
			var err error
			p.out, err = g.AddNode(ir.CallFunction, ir.SanitizeName(p.layer.Target+"."+p.param)+"_dequantized", ops.HostMXInt8,
				[]any{p.mw, p.ew, p.numel, p.group}, map[string]any{"shape": p.shape})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	changed := 0
	for i, p := range params {
		if p.param != "weight" {
			continue
		}
		args := []any{p.layer.Arg(0), p.out}
		if i+1 < len(params) && params[i+1].layer == p.layer {
			args = append(args, params[i+1].out) // the bias
		}
		if _, err := replaceNode(g, p.layer, ir.CallFunction, "linear", args, nil); err != nil {
			return changed, fmt.Errorf("%s: %w", p.layer.Name, err)
		}
		changed++
	}
	return changed, nil
}
