package passes

import (
	"fmt"
	"sort"

	"github.com/gomase/gomase/mase/ir"
)

// Logger receives the passes' INFO/DEBUG lines (MASE's get_logger): a
// line per node a pass changes or skips. It writes to stderr from the
// level LogEnv names, warnings by default (DefaultLogger). Notebooks and
// the CLI may replace it.
var Logger = DefaultLogger()

// IsDropout reports whether n is a dropout: a call of an nn.Dropout
// module or of the dropout function. (Tutorial 1 tests for "dropout" in
// the module's name, which finds the same nodes in the lab's models.)
func IsDropout(mg *ir.MaseGraph, n *ir.Node) bool {
	switch n.Op {
	case ir.CallFunction:
		return n.Target == "dropout"
	case ir.CallModule:
		mod, ok := mg.Model.Module(n.Target)
		return ok && mod.TypeName() == "Dropout"
	}
	return false
}

// CountDropout is Tutorial 1's count_dropout_analysis_pass: it logs every
// dropout (IsDropout) and returns {"dropout_count": N, "dropout_modules": [...]}.
func CountDropout(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	var found []string
	for _, n := range mg.Graph.Nodes() {
		if IsDropout(mg, n) {
			Logger.Info("Found dropout module: " + n.Target)
			found = append(found, n.Target)
		} else {
			Logger.Debug("Skipping node: " + n.Target)
		}
	}
	return mg, Info{"dropout_count": len(found), "dropout_modules": found}, nil
}

// RemoveDropout is Tutorial 1's remove_dropout_transform_pass: every
// dropout (IsDropout) is bypassed (its users rewired to its input) and
// erased. It returns {"removed": [...], "changed": N}. In eval mode the outputs are
// unchanged; compiled mode's remove_dropout rewrite is this pass.
func RemoveDropout(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	var removed []string
	for _, n := range mg.Graph.Nodes() {
		if !IsDropout(mg, n) {
			continue
		}
		parent, ok := n.Arg(0).(*ir.Node)
		if !ok {
			return nil, nil, fmt.Errorf("remove_dropout: %s has no node input to rewire to", n.Name)
		}
		if _, err := n.ReplaceAllUsesWith(parent); err != nil {
			return nil, nil, fmt.Errorf("remove_dropout: %w", err)
		}
		if err := mg.Graph.EraseNode(n); err != nil {
			return nil, nil, fmt.Errorf("remove_dropout: %w", err)
		}
		removed = append(removed, n.Target)
	}
	if err := mg.Graph.Lint(); err != nil {
		return nil, nil, fmt.Errorf("remove_dropout broke the graph: %w", err)
	}
	return mg, Info{"removed": removed, Changed: len(removed)}, nil
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
