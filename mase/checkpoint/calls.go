package checkpoint

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// checkCalls checks that an imported graph calls the model's modules as
// the model's own graph (traced, the reference) does, counting the calls
// whose value reaches the output: a graph file can be
// valid node by node and still compute another model, such as one that
// calls layer 1's query projection in layer 0, or a classifier that skips
// the pooler. Each module the reference calls:
//
//   - is called no more often than the reference calls it;
//   - if it holds parameters or buffers, is called exactly as often, or
//     never, with its state then read by get_attr nodes (a rewrite that
//     replaces the call by functions of the weights, such as compiled
//     mode's mxint8 kernel);
//   - if it holds none (dropout, an activation), may be called less often:
//     passes and rewrites remove or replace such calls.
//
// Modules the reference does not call (added by a pass) are not
// constrained.
func checkCalls(reference, got *ir.Graph, m *nn.Model) error {
	want, have := moduleCalls(reference), moduleCalls(got)
	read := map[string]bool{} // module paths whose state a get_attr reads
	for _, n := range got.Nodes() {
		if n.Op == ir.GetAttr && n.NumUsers() > 0 {
			if i := strings.LastIndexByte(n.Target, '.'); i > 0 {
				read[n.Target[:i]] = true
			}
		}
	}
	stateful := statefulModules(m)
	times := func(n int) string {
		if n == 1 {
			return "once"
		}
		return fmt.Sprintf("%d times", n)
	}
	calls := func(n int) string {
		if n == 1 {
			return "one call"
		}
		return fmt.Sprintf("%d calls", n)
	}
	paths := sortedKeys(want)
	for _, path := range paths { // extra calls first: they name where a call was rewired to
		if w, h := want[path], have[path]; h > w {
			return fmt.Errorf("the graph calls module %s %s where model %s calls it %s (allowed: the calls the model makes; a graph rewired to other modules computes another model)",
				path, times(h), m.Root.TypeName(), times(w))
		}
	}
	for _, path := range paths {
		w, h := want[path], have[path]
		switch {
		case h == w, !stateful[path]:
		case h == 0 && read[path]:
		case h == 0:
			return fmt.Errorf("the graph's output never depends on module %s (%s) or its weights, though model %s calls it %s (allowed: every call the model makes to a module with weights)",
				path, typeName(m, path), m.Root.TypeName(), times(w))
		default:
			return fmt.Errorf("the graph's output depends on %s of module %s where model %s calls it %s (allowed: every call the model makes to a module with weights)",
				calls(h), path, m.Root.TypeName(), times(w))
		}
	}
	return nil
}

// moduleCalls counts the call_module nodes of g by target, only those
// whose value reaches the output: a call left with no users computes
// nothing the graph returns.
func moduleCalls(g *ir.Graph) map[string]int {
	live := map[*ir.Node]bool{}
	var stack []*ir.Node
	if out := g.OutputNode(); out != nil {
		stack = append(stack, out)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if live[n] {
			continue
		}
		live[n] = true
		stack = append(stack, n.Inputs()...)
	}
	calls := map[string]int{}
	for _, n := range g.Nodes() {
		if n.Op == ir.CallModule && live[n] {
			calls[n.Target]++
		}
	}
	return calls
}

// statefulModules are the paths of m's modules that own a parameter or a
// buffer (by the dotted names' module part).
func statefulModules(m *nn.Model) map[string]bool {
	names := make([]string, 0, 64)
	for _, p := range m.Parameters() {
		names = append(names, p.Name)
	}
	for _, b := range m.Buffers() {
		names = append(names, b.Name)
	}
	out := map[string]bool{}
	for _, name := range names {
		if i := strings.LastIndexByte(name, '.'); i > 0 {
			out[name[:i]] = true
		}
	}
	return out
}

// typeName is the type of m's module at path, or "?" when it has none.
func typeName(m *nn.Model, path string) string {
	if mod, ok := m.Module(path); ok {
		return mod.TypeName()
	}
	return "?"
}
