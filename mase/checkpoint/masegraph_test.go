package checkpoint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/internal/floattest"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/trace"
)

// dummyIDs are spec §1.2's token ids of the two dummy sentences.
var dummyIDs = [][]int32{
	{101, 9932, 2089, 2202, 2058, 1996, 2088, 2028, 2154, 102},
	{101, 2023, 2003, 2339, 2017, 2323, 4553, 4748, 4877, 102},
}

func dummyIn() map[string]*tensors.Tensor {
	return map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs)}
}

// nodeRef stands for a node in compared arguments.
type nodeRef string

func namedArgs(v any) any {
	return ir.MapNodes(v, func(n *ir.Node) any { return nodeRef(n.Name) })
}

// compareGraphs checks node names, kinds, targets and arguments.
func compareGraphs(t *testing.T, want, got *ir.Graph) {
	t.Helper()
	wn, gn := want.Nodes(), got.Nodes()
	if len(wn) != len(gn) {
		t.Fatalf("%d nodes, want %d", len(gn), len(wn))
	}
	for i := range wn {
		a, b := wn[i], gn[i]
		if a.Name != b.Name || a.Op != b.Op || a.Target != b.Target {
			t.Errorf("node %d: %s %s %s, want %s %s %s", i, b.Name, b.Op, b.Target, a.Name, a.Op, a.Target)
		}
		if !reflect.DeepEqual(namedArgs(a.Args()), namedArgs(b.Args())) || !reflect.DeepEqual(namedArgs(a.Kwargs()), namedArgs(b.Kwargs())) {
			t.Errorf("node %s: args %s %s, want %s %s", a.Name, ir.FormatArgs(b.Args()), ir.FormatKwargs(b.Kwargs()), ir.FormatArgs(a.Args()), ir.FormatKwargs(a.Kwargs()))
		}
		if (a.Args() == nil) != (b.Args() == nil) {
			t.Errorf("node %s: args nil-ness changed", a.Name)
		}
		if a.String() != b.String() {
			t.Errorf("node printout %q, want %q", b.String(), a.String())
		}
	}
}

func sameOutputs(t *testing.T, a, b *ir.MaseGraph, in map[string]*tensors.Tensor) {
	t.Helper()
	oa, err := execute.Run(a, in)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := execute.Run(b, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(oa) != len(ob) {
		t.Fatalf("%d outputs, want %d", len(ob), len(oa))
	}
	for i := range oa {
		x, y := tensors.MustCopyFlatData[float32](oa[i]), tensors.MustCopyFlatData[float32](ob[i])
		if !slices.Equal(floattest.Bits(x), floattest.Bits(y)) {
			t.Errorf("output %d: %v, want %v", i, y, x)
		}
	}
}

func TestExportImportBertTiny(t *testing.T) {
	m, err := models.NewBertTiny(7)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := trace.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.InitMetadata(mg); err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummyIn()}); err != nil {
		t.Fatal(err)
	}
	// Hardware and software sections with typed values, as passes fill them.
	fc := mg.Graph.Node("classifier")
	fc.Meta.Software = map[string]any{"count": 3, "ratio": 0.5, "tags": []any{"a", int64(2)}, "none": nil}
	fc.Meta.Hardware = ir.Hardware{IsImplicit: true, DeviceID: -1, Toolchain: "INTERNAL_RTL", Module: "fixed_linear",
		Interface:    map[string]map[string]any{"weight": {"storage": "BRAM", "transpose": false}, "bias": {}},
		VerilogParam: map[string]any{"DATA_IN_0_PRECISION_0": 8, "SCALE": 0.25}, MaxParallelism: []int{4, 4}}
	mg.Graph.Meta.Hardware = map[string]any{"verilog_sources": []any{"top.sv"}}

	base := filepath.Join(t.TempDir(), "tutorial_1")
	if err := Export(base, mg, Spec{}); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"name":"bert-tiny"`)) {
		t.Errorf("the graph file does not name the model: %.300s", js)
	}
	got, err := Import(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Graph.Lint(); err != nil {
		t.Fatal(err)
	}
	compareGraphs(t, mg.Graph, got.Graph)
	if !slices.Equal(got.InputNames, mg.InputNames) {
		t.Errorf("input names %v, want %v", got.InputNames, mg.InputNames)
	}
	if d := sameSnapshot(snapshot(t, mg.Model), snapshot(t, got.Model)); d != "" {
		t.Errorf("parameter %s differs", d)
	}
	if fresh := snapshot(t, newModel(t, "bert-tiny", 0)); sameSnapshot(fresh, snapshot(t, got.Model)) == "" {
		t.Error("imported parameters equal a fresh seed-0 model's: were they loaded?")
	}

	values := 0
	for _, a := range mg.Graph.Nodes() {
		b := got.Graph.Node(a.Name)
		ja, _ := json.Marshal(a.Meta.Common)
		jb, _ := json.Marshal(b.Meta.Common)
		if !bytes.Equal(ja, jb) {
			t.Errorf("node %s: common metadata\n%s\nwant\n%s", a.Name, jb, ja)
		}
		for _, part := range [][2]*ir.ArgMap{{a.Meta.Common.Args, b.Meta.Common.Args}, {a.Meta.Common.Results, b.Meta.Common.Results}} {
			for _, k := range part[0].Keys() {
				va, vb := part[0].Get(k).Value, part[1].Get(k).Value
				if _, err := encodeValue(va, nil); err != nil {
					if vb != nil {
						t.Errorf("node %s %s: value %v should not be stored", a.Name, k, vb)
					}
					continue
				}
				if va != nil {
					values++
				}
				if !reflect.DeepEqual(va, vb) {
					t.Errorf("node %s %s: value %#v, want %#v", a.Name, k, vb, va)
				}
			}
		}
		if !reflect.DeepEqual(a.Meta.Software, b.Meta.Software) || !reflect.DeepEqual(a.Meta.Hardware, b.Meta.Hardware) {
			t.Errorf("node %s: software %#v hardware %#v, want %#v %#v", a.Name, b.Meta.Software, b.Meta.Hardware, a.Meta.Software, a.Meta.Hardware)
		}
	}
	if values < 20 {
		t.Errorf("only %d constant values round-tripped", values)
	}
	if !reflect.DeepEqual(got.Graph.Meta, mg.Graph.Meta) {
		t.Errorf("graph metadata %+v, want %+v", got.Graph.Meta, mg.Graph.Meta)
	}
	sameOutputs(t, mg, got, dummyIn())
}

func TestExportImportWithLabels(t *testing.T) {
	m := newModel(t, "bert-tiny", 3)
	mg, err := trace.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "with_labels")
	if err := Export(base, mg, Spec{Model: "bert-tiny", Seed: 11}); err != nil {
		t.Fatal(err)
	}
	got, err := Import(base + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Model.Module("crossentropyloss_0"); !ok {
		t.Error("the loss module created during forward is missing")
	}
	compareGraphs(t, mg.Graph, got.Graph)
	for _, n := range got.Graph.Nodes() {
		if n.Meta != nil {
			t.Fatalf("node %s gained metadata", n.Name)
		}
	}
	ones := [][]int32{make([]int32, 10), make([]int32, 10)}
	for i := range ones {
		for j := range ones[i] {
			ones[i][j] = 1
		}
	}
	sameOutputs(t, mg, got, map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs),
		"attention_mask": tensors.FromValue(ones), "labels": tensors.FromValue([]int32{1, 0})})
}

// exportMLP exports a traced MLP to dir/name and returns the graph.
func exportMLP(t *testing.T, dir, name string, seed uint64) *ir.MaseGraph {
	t.Helper()
	mg, err := trace.NewMaseGraph(newModel(t, "mlp", seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Export(filepath.Join(dir, name), mg, Spec{}); err != nil {
		t.Fatal(err)
	}
	return mg
}

func TestImportRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	exportMLP(t, dir, "a", 1)
	exportMLP(t, dir, "b", 2)
	js, _ := os.ReadFile(filepath.Join(dir, "a.json"))
	st, _ := os.ReadFile(filepath.Join(dir, "a.safetensors"))
	stB, _ := os.ReadFile(filepath.Join(dir, "b.safetensors"))
	if _, err := Import(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	// Each edit is sealed again, so that decoding and validation, not the
	// checksum, are what refuse it.
	replace := func(old, new string) []byte {
		if !bytes.Contains(js, []byte(old)) {
			t.Fatalf("graph file lacks %q", old)
		}
		return resealed(t, bytes.Replace(js, []byte(old), []byte(new), 1))
	}
	cases := []struct {
		name      string
		json, st  []byte
		want      string
		wantInMsg string // the file the error must name
	}{
		{"truncated json", js[:len(js)/2], st, "is corrupt or was edited: its content does not match its checksum", ".json"},
		{"broken json", replace(`"nodes": [`, `"nodes": [,`), st, "invalid JSON at line", ".json"},
		{"wrong type", replace(`"version": 2`, `"version": "2"`), st, "wrong JSON type", ".json"},
		{"unknown field", replace(`"format":`, `"colour": 1, "format":`), st, "unknown field", ".json"},
		{"version", replace(`"version": 2`, `"version": 3`), st, `version 3 is not supported (allowed: "gomase.masegraph" versions 1 to 2)`, ".json"},
		{"unknown model", replace(`"name":"mlp"`, `"name":"resnet"`), st, `model.name "resnet" is not a registry model (allowed: bert-tiny, mlp, resnet18)`, ".json"},
		{"renamed node", replace(`"name":"fc1"`, `"name":"fc1.x"`), st, `named the node "fc1_x", not "fc1.x"`, ".json"},
		{"forward reference", replace(`"node":"x"`, `"node":"relu"`), st, `node reference "relu" names no node defined before this one`, ".json"},
		{"bad arg", replace(`"start_dim":{`, `"start_dim":{"int":1},"z":{"bogus":0},"y":{`), st, `kwargs["z"]: unknown tag "bogus"`, ".json"},
		{"truncated parameters", js, st[:len(st)-10], "is not the one", ".safetensors"},
		{"parameters of another export", js, stB, "come from different exports", ".safetensors"},
	}
	for _, c := range cases {
		base := filepath.Join(dir, "bad")
		os.WriteFile(base+".json", c.json, 0o644)
		os.WriteFile(base+".safetensors", c.st, 0o644)
		_, err := Import(base)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), base+c.wantInMsg) {
			t.Errorf("%s: %v, want an error naming %s and saying %q", c.name, err, base+c.wantInMsg, c.want)
		}
	}
	if _, err := Import(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("missing files: %v", err)
	}
}

func TestExportNeedsARegistryModel(t *testing.T) {
	// A different classifier is a replaced leaf: it exports and comes back.
	cfg := models.BertTinyConfig()
	cfg.NumLabels = 3
	m, err := models.NewBertForSequenceClassification(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	three, err := trace.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Export(filepath.Join(dir, "three"), three, Spec{}); err != nil {
		t.Fatalf("3-label classifier: %v", err)
	}
	back, err := Import(filepath.Join(dir, "three"))
	if err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, three, back, dummyIn())

	// A NAS-like model: other sizes and layer counts (the model's config is
	// stored) and an Identity in place of a square Linear (a replaced leaf).
	cfg = models.BertTinyConfig()
	cfg.NumHiddenLayers, cfg.NumAttentionHeads, cfg.HiddenSize, cfg.IntermediateSize = 4, 4, 256, 1024
	if m, err = models.NewBertForSequenceClassification(cfg, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.ReplaceModule("bert.encoder.layer.3.attention.output.dense", nn.NewIdentity(), nil, 0); err != nil {
		t.Fatal(err)
	}
	nas, err := trace.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Export(filepath.Join(dir, "nas"), nas, Spec{}); err != nil {
		t.Fatalf("NAS model: %v", err)
	}
	if back, err = Import(filepath.Join(dir, "nas")); err != nil {
		t.Fatal(err)
	}
	if got := back.Model.String(); got != nas.Model.String() {
		t.Errorf("NAS model tree after import differs:\n%s", got)
	}
	sameOutputs(t, nas, back, dummyIn())

	// A model the registry cannot build.
	base := filepath.Join(dir, "wrong")
	err = Export(base, nas, Spec{Model: "mlp"})
	if err == nil || !strings.Contains(err.Error(), `Import would rebuild models.New("mlp")`) ||
		!strings.Contains(err.Error(), "the root is BertForSequenceClassification, the registry model's is MLP") {
		t.Errorf("wrong model named: %v", err)
	}
	if err = Export(base, nas, Spec{Model: "gpt"}); err == nil || !strings.Contains(err.Error(), "allowed: bert-tiny, mlp") {
		t.Errorf("unknown model named: %v", err)
	}
	// A leaf of a kind that cannot be saved.
	if err := m.ReplaceModule("bert.pooler.activation", unsavable{}, nil, 0); err != nil {
		t.Fatal(err)
	}
	err = Export(base, nas, Spec{})
	if err == nil || !strings.Contains(err.Error(), "cannot identify the model (root BertForSequenceClassification)") ||
		!strings.Contains(err.Error(), "module bert.pooler.activation (Unsavable) differs from the registry model's and module kind unsavable (Unsavable) cannot be saved") {
		t.Errorf("unsavable leaf: %v", err)
	}
	if _, statErr := os.Stat(base + ".json"); statErr == nil {
		t.Error("a failed export wrote files")
	}

	// An argument the encoding cannot hold is named with its node.
	mlp, _ := trace.NewMaseGraph(newModel(t, "mlp", 1), nil)
	relu := mlp.Graph.Node("relu")
	if err := relu.SetKwargs(map[string]any{"inplace": tensors.FromValue([]float32{1})}); err != nil {
		t.Fatal(err)
	}
	if err := Export(base, mlp, Spec{}); err == nil || !strings.Contains(err.Error(), `node relu: kwargs["inplace"]: value of type *tensors.Tensor`) {
		t.Errorf("tensor argument: %v", err)
	}
}

func TestExportIsAtomic(t *testing.T) {
	dir := t.TempDir()
	old := exportMLP(t, dir, "m", 1)
	oldJS, _ := os.ReadFile(filepath.Join(dir, "m.json"))
	oldST, _ := os.ReadFile(filepath.Join(dir, "m.safetensors"))
	newMG, _ := trace.NewMaseGraph(newModel(t, "mlp", 2), nil)

	// A failure before the renames changes nothing.
	for _, c := range [][2]string{{"write", ".safetensors"}, {"write", ".json"}, {"sync", ".json"}, {"rename", ".safetensors"}} {
		failAfter(t, c[0], c[1])
		if err := Export(filepath.Join(dir, "m"), newMG, Spec{}); err == nil || !strings.Contains(err.Error(), "simulated failure") {
			t.Errorf("%v: err = %v", c, err)
		}
		js, _ := os.ReadFile(filepath.Join(dir, "m.json"))
		st, _ := os.ReadFile(filepath.Join(dir, "m.safetensors"))
		if !bytes.Equal(js, oldJS) || !bytes.Equal(st, oldST) {
			t.Errorf("failure at %v changed the old files", c)
		}
		if got := listDir(t, dir); !slices.Equal(got, []string{"m.json", "m.safetensors"}) {
			t.Errorf("failure at %v left %v", c, got)
		}
		back, err := Import(filepath.Join(dir, "m"))
		if err != nil {
			t.Fatal(err)
		}
		if d := sameSnapshot(snapshot(t, old.Model), snapshot(t, back.Model)); d != "" {
			t.Errorf("old checkpoint lost %s", d)
		}
	}
	// Between the two renames the pair is mixed: Import notices.
	failAfter(t, "rename", ".json")
	if err := Export(filepath.Join(dir, "m"), newMG, Spec{}); err == nil {
		t.Error("export succeeded despite the failing rename")
	}
	atomicfile.FailHook = nil
	if _, err := Import(filepath.Join(dir, "m")); err == nil || !strings.Contains(err.Error(), "different exports") {
		t.Errorf("mixed pair: %v", err)
	}
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	home, _ := os.UserHomeDir()
	for in, want := range map[string]string{
		"a/b":             "a/b",
		"a/b.json":        "a/b",
		"a/b.safetensors": "a/b",
		dir:               filepath.Join(dir, "model"),
		"out/":            "out/model",
		"~/tutorial_1":    filepath.Join(home, "tutorial_1"),
	} {
		st, js, err := Paths(in)
		if err != nil || st != want+".safetensors" || js != want+".json" {
			t.Errorf("Paths(%q) = %s, %s, %v; want base %s", in, st, js, err, want)
		}
	}
	if _, _, err := Paths(""); err == nil {
		t.Error("empty path accepted")
	}
	// Export into a directory and import from it.
	mg := exportMLP(t, dir, "", 4)
	got, err := Import(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameSnapshot(snapshot(t, mg.Model), snapshot(t, got.Model)); d != "" {
		t.Errorf("parameter %s differs", d)
	}
}

func TestExportImportTransformedGraph(t *testing.T) {
	mg, err := trace.NewMaseGraph(newModel(t, "bert-tiny", 5), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := mg.Graph.Len()
	if mg, _, err = passes.RemoveDropout(mg); err != nil {
		t.Fatal(err)
	}
	if mg.Graph.Len() != before-6 {
		t.Fatalf("RemoveDropout left %d of %d nodes", mg.Graph.Len(), before)
	}
	base := filepath.Join(t.TempDir(), "no_dropout")
	if err := Export(base, mg, Spec{}); err != nil {
		t.Fatal(err)
	}
	got, err := Import(base)
	if err != nil {
		t.Fatal(err)
	}
	compareGraphs(t, mg.Graph, got.Graph)
	if _, n, _ := passes.CountDropout(got); n["dropout_count"] != 0 {
		t.Errorf("imported graph has %v dropout nodes", n["dropout_count"])
	}
	sameOutputs(t, mg, got, dummyIn())
}

func TestExportImportWithLoRA(t *testing.T) {
	mg, err := trace.NewMaseGraph(newModel(t, "bert-tiny", 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if mg, _, err = passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 4, Alpha: 8, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	// Move B off zero so the adapters change the logits.
	for _, p := range mg.Model.Parameters() {
		if strings.HasSuffix(p.Name, "lora_b.weight") {
			vals, shape, err := mg.Model.ParamValues(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			for i := range vals {
				vals[i] = 0.01 * float32(i%7-3)
			}
			if err := p.Variable.SetValue(tensors.FromFlatDataAndDimensions(vals, shape...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := filepath.Join(t.TempDir(), "lora")
	if err := Export(base, mg, Spec{}); err != nil {
		t.Fatal(err)
	}
	back, err := Import(base)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Model.String(); got != mg.Model.String() {
		t.Errorf("module tree after import:\n%s\nwant\n%s", got, mg.Model.String())
	}
	sameOutputs(t, mg, back, dummyIn())
	trainable := func(g *ir.MaseGraph) map[string]bool {
		out := map[string]bool{}
		for _, p := range g.Model.Parameters() {
			out[p.Name] = p.Variable.Trainable
		}
		return out
	}
	if a, b := trainable(mg), trainable(back); !reflect.DeepEqual(a, b) {
		t.Errorf("trainable flags changed on import:\n%v\nwant\n%v", b, a)
	}
	if !trainable(back)["bert.encoder.layer.0.attention.self.query.lora_a.weight"] || trainable(back)["bert.embeddings.word_embeddings.weight"] {
		t.Error("after import, adapters must train and the embeddings stay frozen")
	}

	// A corrupted replaced-module configuration is a clear error.
	_, jsonPath, _ := Paths(base)
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := resealed(t, bytes.Replace(raw, []byte(`"kind":"LoRALinear"`), []byte(`"kind":"LoRALinearX"`), 1))
	if err := os.WriteFile(jsonPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(base); err == nil || !strings.Contains(err.Error(), `unknown module kind "LoRALinearX" (allowed: `) {
		t.Errorf("bad kind: %v", err)
	}
}

func TestExportImportPruned(t *testing.T) {
	mg, err := trace.NewMaseGraph(newModel(t, "bert-tiny", 4), []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	l1 := &passes.PruneConfig{Sparsity: 0.5, Method: passes.PruneL1, Scope: passes.PruneLocal}
	if mg, _, err = passes.PruneTransform(mg, passes.PruneArgs{Weight: l1, Activation: l1}); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "tutorial_4_pruned")
	if err := Export(base, mg, Spec{}); err != nil {
		t.Fatal(err)
	}
	back, err := Import(base)
	if err != nil {
		t.Fatal(err)
	}
	mask := func(g *ir.MaseGraph) int {
		return len(g.Model.Buffers())
	}
	if mask(back) != 14 || mask(mg) != 14 {
		t.Errorf("%d masks after import, %d before; want 14", mask(back), mask(mg))
	}
	before, _, err := passes.ReportWeightSparsity(mg)
	if err != nil {
		t.Fatal(err)
	}
	after, _, err := passes.ReportWeightSparsity(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("sparsity after import %+v, want %+v", after, before)
	}
	in := dummyIn()
	in["attention_mask"] = tensors.FromFlatDataAndDimensions(slices.Repeat([]int32{1}, 20), 2, 10)
	in["labels"] = tensors.FromValue([]int32{0, 1})
	sameOutputs(t, mg, back, in)
}

// unsavable is a leaf module of a kind nn.RegisterModuleKind never saw.
type unsavable struct{}

func (unsavable) TypeName() string                                              { return "Unsavable" }
func (unsavable) ExtraRepr() string                                             { return "" }
func (unsavable) Children() []nn.Named                                          { return nil }
func (unsavable) Params() []nn.ParamSpec                                        { return nil }
func (unsavable) Forward(_ *nn.Call, args []any, _ map[string]any) (any, error) { return args[0], nil }
