package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

// Names of the passes a Pipeline knows, as MASE names them (the keys of
// a pipeline's pass_args).
const (
	InitMetadataPass      = "init_metadata_analysis_pass"
	AddCommonMetadataPass = "add_common_metadata_analysis_pass"
	QuantizeTransformPass = "quantize_transform_pass"
	PruneTransformPass    = "prune_transform_pass"
)

// PipelinePass is one step of a Pipeline: a named pass that takes its
// argument (nil when the caller gave none) and returns the graph and what
// it found.
type PipelinePass struct {
	Name string
	Run  func(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error)
}

// Pipeline runs passes in order, each with its own argument (MASE's
// AutoPipeline).
type Pipeline struct {
	Passes []PipelinePass
}

// CompressionPipeline is MASE's CompressionPipeline: InitMetadata,
// AddCommonMetadata, QuantizeTransform, PruneTransform.
//
// Arguments by pass name: add_common_metadata_analysis_pass takes a
// CommonMetadataArgs; without one it records values on the model's dummy
// input (models.DummyInput, MASE's HF dummy input with add_value), which
// the activation pruner needs. quantize_transform_pass takes a
// QuantizeArgs or a MASE config map (ParseQuantizeArgs);
// prune_transform_pass a PruneArgs or a MASE config map (ParsePruneArgs).
// The transform passes have no meaningful default: leaving out their
// arguments is an error unless they are skipped.
func CompressionPipeline() *Pipeline {
	return &Pipeline{Passes: []PipelinePass{
		{Name: InitMetadataPass, Run: func(mg *ir.MaseGraph, _ any) (*ir.MaseGraph, Info, error) { return InitMetadata(mg) }},
		{Name: AddCommonMetadataPass, Run: runAddCommonMetadata},
		{Name: QuantizeTransformPass, Run: runQuantizeTransform},
		{Name: PruneTransformPass, Run: runPruneTransform},
	}}
}

// Names lists the pipeline's pass names in order.
func (p *Pipeline) Names() []string {
	out := make([]string, len(p.Passes))
	for i, ps := range p.Passes {
		out[i] = ps.Name
	}
	return out
}

// Run applies every pass not named in skip to mg, in order, with
// args[pass name], and returns the graph and each pass's Info by name.
// Every key of args and every name in skip must be one of the pipeline's
// passes, so a misspelt name is an error rather than silently ignored.
// A pass that fails stops the pipeline; the error names it.
func (p *Pipeline) Run(mg *ir.MaseGraph, args map[string]any, skip ...string) (*ir.MaseGraph, map[string]Info, error) {
	names := p.Names()
	for k := range args {
		if !slices.Contains(names, k) {
			return nil, nil, fmt.Errorf("pipeline: arguments for unknown pass %q (passes: %s)", k, strings.Join(names, ", "))
		}
	}
	for _, k := range skip {
		if !slices.Contains(names, k) {
			return nil, nil, fmt.Errorf("pipeline: cannot skip unknown pass %q (passes: %s)", k, strings.Join(names, ", "))
		}
	}
	infos := map[string]Info{}
	for _, ps := range p.Passes {
		if slices.Contains(skip, ps.Name) {
			continue
		}
		out, info, err := ps.Run(mg, args[ps.Name])
		if err != nil {
			return nil, nil, fmt.Errorf("pipeline: %s: %w", ps.Name, err)
		}
		mg, infos[ps.Name] = out, info
	}
	return mg, infos, nil
}

func runAddCommonMetadata(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
	switch a := arg.(type) {
	case nil:
		dummy, err := models.DummyInput(mg.Model, mg.InputNames, 0)
		if err != nil {
			return nil, nil, err
		}
		return AddCommonMetadata(mg, CommonMetadataArgs{DummyIn: dummy, AddValue: true})
	case CommonMetadataArgs:
		return AddCommonMetadata(mg, a)
	case *CommonMetadataArgs:
		return AddCommonMetadata(mg, *a)
	default:
		return nil, nil, fmt.Errorf("arguments must be a CommonMetadataArgs (or none, for the model's dummy input), got %T", arg)
	}
}

func runQuantizeTransform(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
	switch a := arg.(type) {
	case nil:
		return nil, nil, fmt.Errorf("no arguments: give a QuantizeArgs or a MASE config map, or skip the pass")
	case QuantizeArgs:
		return QuantizeTransform(mg, a)
	case *QuantizeArgs:
		return QuantizeTransform(mg, *a)
	case map[string]any:
		qa, err := ParseQuantizeArgs(a)
		if err != nil {
			return nil, nil, err
		}
		return QuantizeTransform(mg, qa)
	default:
		return nil, nil, fmt.Errorf("arguments must be a QuantizeArgs or a MASE config map, got %T", arg)
	}
}

func runPruneTransform(mg *ir.MaseGraph, arg any) (*ir.MaseGraph, Info, error) {
	switch a := arg.(type) {
	case nil:
		return nil, nil, fmt.Errorf("no arguments: give a PruneArgs or a MASE config map, or skip the pass")
	case PruneArgs:
		return PruneTransform(mg, a)
	case *PruneArgs:
		return PruneTransform(mg, *a)
	case map[string]any:
		pa, err := ParsePruneArgs(a)
		if err != nil {
			return nil, nil, err
		}
		return PruneTransform(mg, pa)
	default:
		return nil, nil, fmt.Errorf("arguments must be a PruneArgs or a MASE config map, got %T", arg)
	}
}
