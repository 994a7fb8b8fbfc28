package passes_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
)

// t3Config is Tutorial 3's PTQ config as a MASE user writes it.
func t3Config(width, frac int) map[string]any {
	return map[string]any{
		"by":      "type",
		"default": map[string]any{"config": map[string]any{"name": nil}},
		"linear": map[string]any{"config": map[string]any{"name": "integer",
			"data_in_width": float64(width), "data_in_frac_width": float64(frac),
			"weight_width": float64(width), "weight_frac_width": float64(frac),
			"bias_width": float64(width), "bias_frac_width": float64(frac)}},
	}
}

func TestQuantizeBertTinyByType(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	if _, _, err := passes.InitMetadata(mg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: fullBatch()}); err != nil {
		t.Fatal(err)
	}
	before := logits(t, mg)
	typesBefore := map[string]string{}
	for _, nm := range mg.Model.Modules() {
		typesBefore[nm.Path] = nm.Module.TypeName()
	}
	raw := t3Config(8, 4)
	args, err := passes.ParseQuantizeArgs(raw)
	if err != nil {
		t.Fatal(err)
	}
	kept := args.Clone()
	mg, info, err := passes.QuantizeTransform(mg, args)
	if err != nil {
		t.Fatal(err)
	}
	// Acceptance 21: exactly the 14 Linears become LinearInteger; nothing else changes.
	if n := len(info["quantized"].([]string)); n != 14 {
		t.Errorf("quantized %d modules, want 14", n)
	}
	for _, nm := range mg.Model.Modules() {
		was := typesBefore[nm.Path]
		switch {
		case was == "Linear" && nm.Module.TypeName() != "LinearInteger":
			t.Errorf("%s is %s, want LinearInteger", nm.Path, nm.Module.TypeName())
		case was != "Linear" && nm.Module.TypeName() != was:
			t.Errorf("%s changed from %s to %s", nm.Path, was, nm.Module.TypeName())
		}
	}
	if got := info["types"].(map[string]int)["LinearInteger"]; got != 14 {
		t.Errorf("types = %v", info["types"])
	}
	// Weights and biases were carried over, not re-initialised.
	w, _, _ := mg.Model.ParamValues("classifier.weight")
	b, _, _ := mg.Model.ParamValues("classifier.bias")
	if len(w) != 256 || len(b) != 2 {
		t.Fatalf("classifier weight %d, bias %d values", len(w), len(b))
	}
	// Metadata: the quantized args of a Linear are now integer [8, 4] (MASE writes the config's name).
	n := mg.Graph.Node("bert_encoder_layer_0_intermediate_dense")
	for _, name := range []string{"data_in_0", "weight", "bias"} {
		a := n.Meta.Common.Args.Get(name)
		if a == nil || a.Type != "integer" || !slices.Equal(a.Precision, []int{8, 4}) {
			t.Errorf("%s metadata = %+v, want integer [8 4]", name, a)
		}
	}
	if r := n.Meta.Common.Results.Get("data_out_0"); r.Type != "float" {
		t.Errorf("data_out_0 is %s; the output is not quantized without data_out_width", r.Type)
	}
	// PTQ at 8/4 moves the logits; the caller's config is untouched and
	// can be used again (MASE raises KeyError: 'by' here).
	after := logits(t, mg)
	if slices.Equal(after, before) {
		t.Error("8/4 quantization left the logits bit-identical")
	}
	if !reflect.DeepEqual(raw, t3Config(8, 4)) || !reflect.DeepEqual(args, kept) {
		t.Error("the pass modified its configuration")
	}
	if _, _, err := passes.QuantizeTransform(bertGraph(t, []string{"input_ids"}), args); err != nil {
		t.Errorf("second call with the same args: %v", err)
	}
	rows := passes.QuantizeSummary(mg)
	found := false
	for _, r := range rows {
		if r.Op == "linear" {
			found = r.Total == 14 && r.ByType["LinearInteger"] == 14
			if r.String() != "linear: 14 (LinearInteger 14)" {
				t.Errorf("summary row %q", r.String())
			}
		}
	}
	if !found {
		t.Errorf("summary %v", rows)
	}
}

func TestQuantizeWideFixedPointIsNearlyFloat(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	before := logits(t, mg)
	args, err := passes.ParseQuantizeArgs(t3Config(32, 16))
	if err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.QuantizeTransform(mg, args); err != nil {
		t.Fatal(err)
	}
	after := logits(t, mg)
	for i := range before {
		if d := math.Abs(float64(after[i] - before[i])); d > 1e-3 {
			t.Errorf("logit %d: %v with Q(32,16), %v in float", i, after[i], before[i])
		}
	}
}

func TestQuantizeExportImport(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	args, _ := passes.ParseQuantizeArgs(t3Config(8, 4))
	mg, _, err := passes.QuantizeTransform(mg, args)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "tutorial_3_ptq")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{}); err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Import(base)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := back.Model.Module("classifier"); m.TypeName() != "LinearInteger" {
		t.Errorf("classifier imported as %s", m.TypeName())
	}
	if a, b := logits(t, mg), logits(t, back); !slices.Equal(a, b) {
		t.Errorf("logits after import %v, want %v", b, a)
	}
}

func TestQuantizeByNameAndRegexOrder(t *testing.T) {
	int8 := map[string]any{"name": "integer", "data_in_width": 8.0, "data_in_frac_width": 4.0,
		"weight_width": 8.0, "weight_frac_width": 4.0, "bias_width": 8.0, "bias_frac_width": 4.0}
	js := `{"by": "regex_name",
	  "classifier": {"config": {"name": null}},
	  "bert_encoder_layer_0_(attention_self_.*|.*dense)|classifier": {"config": ` + mustJSON(t, int8) + `},
	  "default": {"config": {"name": null}}}`
	args, err := passes.QuantizeArgsFromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	mg := bertGraph(t, []string{"input_ids"})
	if mg, _, err = passes.QuantizeTransform(mg, args); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, nm := range mg.Model.Modules() {
		if nm.Module.TypeName() == "LinearInteger" {
			count++
			if !strings.HasPrefix(nm.Path, "bert.encoder.layer.0.") {
				t.Errorf("%s quantized", nm.Path)
			}
		}
	}
	// Layer 0 has 6 Linears; the classifier's own pattern comes first and says None.
	if count != 6 {
		t.Errorf("%d modules quantized, want 6", count)
	}
	// A pattern that also reaches LayerNorm nodes is an error naming the node.
	wide := passes.QuantizeArgs{By: "regex_name", Entries: []passes.QuantizeEntry{{Key: ".*layer_0.*", Config: int8}}}
	if _, _, err := passes.QuantizeTransform(bertGraph(t, []string{"input_ids"}), wide); err == nil ||
		!strings.Contains(err.Error(), "node bert_encoder_layer_0_attention_output_LayerNorm (op layer_norm)") {
		t.Errorf("wide pattern: %v", err)
	}

	byName := passes.QuantizeArgs{By: "name", Entries: []passes.QuantizeEntry{{Key: "bert_pooler_dense", Config: int8}}}
	mg = bertGraph(t, []string{"input_ids"})
	if _, info, err := passes.QuantizeTransform(mg, byName); err != nil || !slices.Equal(info["quantized"].([]string), []string{"bert.pooler.dense"}) {
		t.Errorf("by name: %v %v", info, err)
	}
}

func TestQuantizeArgsFromTOML(t *testing.T) {
	src := `
by = "type"
[default.config]
name = "NA"
[linear.config]
name = "integer"
data_in_width = 8
data_in_frac_width = 4
weight_width = 8
weight_frac_width = 4
bias_width = 8
bias_frac_width = 4
`
	args, err := passes.QuantizeArgsFromTOML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := passes.ParseQuantizeArgs(t3Config(8, 4))
	if !reflect.DeepEqual(args, want) {
		t.Errorf("TOML args %+v, want %+v", args, want)
	}
}

func TestQuantizeErrors(t *testing.T) {
	int8 := t3Config(8, 4)["linear"].(map[string]any)["config"].(map[string]any)
	cases := []struct {
		name string
		raw  map[string]any
		want string
	}{
		{"no by", map[string]any{"linear": map[string]any{"config": int8}}, `"by" is missing (allowed: type, name, regex_name)`},
		{"bad by", map[string]any{"by": "op"}, `unsupported "by" "op" (allowed: type, name, regex_name)`},
		{"bad op", map[string]any{"by": "type", "linaer": map[string]any{"config": int8}}, `entry "linaer" is not a quantizable op`},
		{"no config key", map[string]any{"by": "type", "linear": map[string]any{"cfg": int8}}, `entry "linear" has key "cfg" (allowed: config)`},
		{"bad regex", map[string]any{"by": "regex_name", "(": map[string]any{"config": int8}}, `entry "(" is not a valid regular expression`},
		{"name type", map[string]any{"by": "type", "linear": map[string]any{"config": map[string]any{"name": 8.0}}}, `config "name" is float64`},
	}
	for _, c := range cases {
		if _, err := passes.ParseQuantizeArgs(c.raw); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}

	// A default config would reach add/matmul/...: an error, and the graph is untouched.
	mg := bertGraph(t, []string{"input_ids"})
	args := passes.QuantizeArgs{By: "type", Default: int8, Entries: []passes.QuantizeEntry{{Key: "linear", Config: int8}}}
	if _, _, err := passes.QuantizeTransform(mg, args); err == nil || !strings.Contains(err.Error(), "gomase quantizes only linear modules") {
		t.Errorf("default on other ops: %v", err)
	}
	// A bad key in the last Linear's config leaves every module as it was.
	bad := map[string]any{}
	for k, v := range int8 {
		bad[k] = v
	}
	bad["weight_widht"] = 8.0
	args = passes.QuantizeArgs{By: "name", Entries: []passes.QuantizeEntry{{Key: "bert_pooler_dense", Config: int8}, {Key: "classifier", Config: bad}}}
	if _, _, err := passes.QuantizeTransform(mg, args); err == nil || !strings.Contains(err.Error(), "weight_widht") {
		t.Errorf("bad key: %v", err)
	}
	for _, nm := range mg.Model.Modules() {
		if strings.HasPrefix(nm.Module.TypeName(), "LinearInteger") {
			t.Errorf("%s was quantized by a failed pass", nm.Path)
		}
	}
	// LoRA must be fused first.
	if mg, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 2, Alpha: 2}); err != nil {
		t.Fatal(err)
	} else if _, _, err := passes.QuantizeTransform(mg, passes.QuantizeByType("linear", int8)); err == nil || !strings.Contains(err.Error(), "fuse the adapters first") {
		t.Errorf("LoRA: %v", err)
	}
}

func TestQuantizeKeepsTrainingGradients(t *testing.T) {
	// QAT: the quantized weight still receives gradients (STE).
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	mg, _, err := passes.QuantizeTransform(mg, passes.QuantizeByType("linear", t3Config(8, 4)["linear"].(map[string]any)["config"].(map[string]any)))
	if err != nil {
		t.Fatal(err)
	}
	w0, _, _ := mg.Model.ParamValues("classifier.weight")
	trainOneStep(t, mg)
	w1, _, _ := mg.Model.ParamValues("classifier.weight")
	if slices.Equal(w0, w1) {
		t.Error("a training step did not move the quantized classifier's weight")
	}
}

func trainOneStep(t *testing.T, mg *ir.MaseGraph) {
	t.Helper()
	cfg := train.DefaultConfig()
	tr, err := train.New(mg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Step(fullBatch(), 1e-2); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
