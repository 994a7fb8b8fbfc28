package passes_test

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/passes"
)

// tutorial5Compression is Tutorial 5's pass_args: integer 8/4 on every
// Linear, l1-norm 0.5 local on weights and activations, as MASE config maps.
func tutorial5Compression() map[string]any {
	integer := map[string]any{"name": "integer", "data_in_width": 8.0, "data_in_frac_width": 4.0,
		"weight_width": 8.0, "weight_frac_width": 4.0, "bias_width": 8.0, "bias_frac_width": 4.0}
	prune := map[string]any{"sparsity": 0.5, "method": "l1-norm", "scope": "local"}
	return map[string]any{
		passes.QuantizeTransformPass: map[string]any{"by": "type", "default": map[string]any{"config": map[string]any{"name": nil}},
			"linear": map[string]any{"config": integer}},
		passes.PruneTransformPass: map[string]any{"weight": prune, "activation": prune},
	}
}

func TestCompressionPipelineQuantizesThenPrunes(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids"})
	p := passes.CompressionPipeline()
	if got := strings.Join(p.Names(), ","); got != "init_metadata_analysis_pass,add_common_metadata_analysis_pass,quantize_transform_pass,prune_transform_pass" {
		t.Fatalf("passes %s", got)
	}
	out, infos, err := p.Run(mg, tutorial5Compression())
	if err != nil {
		t.Fatal(err)
	}
	nQuantized := 0
	for _, nm := range out.Model.Modules() {
		if _, ok := nm.Module.(*quantized.Linear); ok {
			nQuantized++
		}
	}
	if nQuantized != 14 {
		t.Errorf("%d quantized Linear modules, want 14", nQuantized)
	}
	pruned, _ := infos[passes.PruneTransformPass]["pruned"].([]passes.PrunedModule)
	if len(pruned) != 14 {
		t.Fatalf("%d pruned modules, want 14 (info %v)", len(pruned), infos[passes.PruneTransformPass])
	}
	for _, pm := range pruned {
		// A 128×128 weight without ties keeps exactly half (spec §9 item 26).
		if pm.Total == 128*128 && pm.Kept != 8192 {
			t.Errorf("%s keeps %d of %d", pm.Module, pm.Kept, pm.Total)
		}
	}
	if len(infos) != 4 {
		t.Errorf("infos for %d passes, want 4", len(infos))
	}
}

func TestCompressionPipelineSkipAndErrors(t *testing.T) {
	args := tutorial5Compression()
	mg := bertGraph(t, []string{"input_ids"})
	out, infos, err := passes.CompressionPipeline().Run(mg, map[string]any{passes.QuantizeTransformPass: args[passes.QuantizeTransformPass]}, passes.PruneTransformPass)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := infos[passes.PruneTransformPass]; ok {
		t.Error("a skipped pass reported info")
	}
	if _, ok := out.Model.Module("bert.pooler.dense"); !ok {
		t.Fatal("pooler missing")
	}
	for _, c := range []struct {
		args map[string]any
		skip []string
		want string
	}{
		{map[string]any{"quantise_transform_pass": nil}, nil, `unknown pass "quantise_transform_pass"`},
		{nil, []string{"prune"}, `cannot skip unknown pass "prune"`},
		{map[string]any{passes.PruneTransformPass: args[passes.PruneTransformPass]}, nil, "quantize_transform_pass: no arguments"},
		{map[string]any{passes.QuantizeTransformPass: 3}, nil, "must be a QuantizeArgs or a MASE config map, got int"},
		{map[string]any{passes.QuantizeTransformPass: args[passes.QuantizeTransformPass], passes.PruneTransformPass: map[string]any{"weight": map[string]any{"sparsity": 1, "method": "l1-norm"}}}, nil, "Sparsity must be a float"},
	} {
		_, _, err := passes.CompressionPipeline().Run(bertGraph(t, []string{"input_ids"}), c.args, c.skip...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v skip %v: error %v, want %q", c.args, c.skip, err, c.want)
		}
	}
}
