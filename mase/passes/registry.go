package passes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase"
)

// Simple is a pass that takes no arguments besides the graph.
type Simple func(mg *mase.MaseGraph) (*mase.MaseGraph, Info, error)

// simple lists the argument-free passes by their MASE-style names (the
// CLI's --pass values).
var simple = map[string]Simple{
	"init_metadata":  InitMetadata,
	"count_dropout":  CountDropout,
	"remove_dropout": RemoveDropout,
}

// SimpleNames lists the passes ByName knows, sorted.
func SimpleNames() []string {
	out := make([]string, 0, len(simple))
	for k := range simple {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ByName returns an argument-free pass by name, or an error listing the
// allowed names.
func ByName(name string) (Simple, error) {
	if p, ok := simple[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown pass %q (allowed: %s)", name, strings.Join(SimpleNames(), ", "))
}
