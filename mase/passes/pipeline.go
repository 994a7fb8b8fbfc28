package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
)

// Pipeline runs passes in order, each with its own argument (MASE's
// AutoPipeline).
type Pipeline struct {
	Passes []Pass
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
	p, err := Standard().Pipeline(InitMetadataPass, AddCommonMetadataPass, QuantizeTransformPass, PruneTransformPass)
	if err != nil {
		panic("passes: " + err.Error())
	}
	return p
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
