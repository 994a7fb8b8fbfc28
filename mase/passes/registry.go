package passes

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/ir"
)

// Simple is a pass that takes no arguments besides the graph.
type Simple func(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error)

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

// steps lists the passes that take arguments, by MASE's name, as Pipeline
// steps (a custom Pipeline can append them).
var steps = map[string]PipelinePass{
	AddHardwareMetadataPass: {Name: AddHardwareMetadataPass, Run: runAddHardwareMetadata},
}

// StepNames lists the passes StepByName knows, sorted.
func StepNames() []string {
	out := make([]string, 0, len(steps))
	for k := range steps {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// StepByName returns a pass that takes arguments as a Pipeline step, by
// MASE's name (add_hardware_metadata_analysis_pass, ...), or an error
// listing the allowed names.
func StepByName(name string) (PipelinePass, error) {
	if p, ok := steps[name]; ok {
		return p, nil
	}
	return PipelinePass{}, fmt.Errorf("unknown pass %q (allowed: %s)", name, strings.Join(StepNames(), ", "))
}

// runAddHardwareMetadata runs AddHardwareMetadata with a HardwareArgs, a
// MASE pass_args map (ParseHardwareArgs) or nothing (the lab's
// parallelism 4).
func runAddHardwareMetadata(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
	switch a := arg.(type) {
	case nil:
		return AddHardwareMetadata(mg, HardwareArgs{})
	case HardwareArgs:
		return AddHardwareMetadata(mg, a)
	case *HardwareArgs:
		return AddHardwareMetadata(mg, *a)
	case map[string]any:
		ha, err := ParseHardwareArgs(a)
		if err != nil {
			return nil, nil, err
		}
		return AddHardwareMetadata(mg, ha)
	default:
		return nil, nil, fmt.Errorf("arguments must be a HardwareArgs or a MASE pass_args map, got %T", arg)
	}
}
