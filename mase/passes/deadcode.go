package passes

import "github.com/gomase/gomase/mase/ir"

// EliminateDeadCode erases nodes nothing uses (size() calls left by
// tracing, unused branches), last first so that chains of dead nodes go in
// one pass. Placeholders and the output stay. It returns {"erased":
// [names], "changed": N}.
func EliminateDeadCode(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	g := mg.Graph
	erased := []string{}
	nodes := g.Nodes()
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		if n.Op == ir.Placeholder || n.Op == ir.Output || n.NumUsers() > 0 {
			continue
		}
		if err := g.EraseNode(n); err != nil {
			return nil, nil, err
		}
		erased = append(erased, n.Name)
	}
	return mg, Info{"erased": erased, Changed: len(erased)}, nil
}
