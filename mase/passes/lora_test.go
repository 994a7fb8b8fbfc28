package passes_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
)

func fullBatch() map[string]*tensors.Tensor {
	mask := make([]int32, 20)
	for i := range mask {
		mask[i] = 1
	}
	return map[string]*tensors.Tensor{"input_ids": tensors.FromValue(dummyIDs),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, 2, 10), "labels": tensors.FromValue([]int32{1, 0})}
}

func logits(t *testing.T, mg *ir.MaseGraph) []float32 {
	t.Helper()
	out, err := execute.Run(mg, fullBatch())
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[1])
}

func TestLoRAInsertTrainFuse(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	before := logits(t, mg)
	wBefore, _, _ := mg.Model.ParamValues("bert.encoder.layer.0.attention.self.query.weight")
	bBefore, _, _ := mg.Model.ParamValues("bert.encoder.layer.0.attention.self.query.bias")

	mg, info, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 6, Alpha: 1.0, Dropout: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info["replaced"].([]string)); n != 14 {
		t.Errorf("replaced %d Linear modules, want 14", n)
	}
	if got := logits(t, mg); !slices.Equal(got, before) {
		t.Errorf("B = 0 must leave the logits unchanged: %v → %v", before, got)
	}
	// Hand count: r·(in+out) per adapter. 8 square 128×128 (Q,K,V,O ×2 layers) + pooler: 9·6·256;
	// intermediate and output dense (128↔512) ×2: 4·6·640; classifier 128→2: 6·130.
	want := 9*6*256 + 4*6*640 + 6*130
	rows, rep := passes.ReportTrainableParameters(mg)
	if rep["trainable"] != want || want != 29964 {
		t.Errorf("trainable after LoRA = %v, want %d", rep["trainable"], want)
	}
	if rep["total"] != 4386178+want {
		t.Errorf("total = %v", rep["total"])
	}
	if rows[0].Module != "" || rows[0].Trainable != want {
		t.Errorf("first row %+v", rows[0])
	}
	// Train a few steps: only A and B move.
	cfg := train.DefaultConfig()
	cfg.LearningRate = 1e-2
	tr, err := train.New(mg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, _, err := tr.Step(fullBatch(), 1e-2); err != nil {
			t.Fatal(err)
		}
	}
	w, _, _ := mg.Model.ParamValues("bert.encoder.layer.0.attention.self.query.linear.weight")
	b, _, _ := mg.Model.ParamValues("bert.encoder.layer.0.attention.self.query.linear.bias")
	ln, _, _ := mg.Model.ParamValues("bert.embeddings.LayerNorm.weight")
	bm, _, _ := mg.Model.ParamValues("bert.encoder.layer.0.attention.self.query.lora_b.weight")
	if !slices.Equal(w, wBefore) || !slices.Equal(b, bBefore) || ln[0] != 1 {
		t.Error("a frozen parameter (base weight, bias or LayerNorm) changed in training")
	}
	if slices.Equal(bm, make([]float32, len(bm))) {
		t.Error("B did not train")
	}
	trained := logits(t, mg)
	if slices.Equal(trained, before) {
		t.Error("training changed nothing")
	}
	mg, info, err = passes.FuseLoRA(mg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info["fused"].([]string)); n != 14 {
		t.Errorf("fused %d", n)
	}
	fused := logits(t, mg)
	for i := range fused {
		if math.Abs(float64(fused[i]-trained[i])) > 1e-4 {
			t.Errorf("fused logits %v differ from LoRA logits %v", fused, trained)
			break
		}
	}
	if m, _ := mg.Model.Module("classifier"); m.TypeName() != "Linear" {
		t.Errorf("classifier is %s after fusing", m.TypeName())
	}
	if _, _, err := mg.Model.ParamValues("classifier.bias"); err != nil {
		t.Errorf("fused classifier lost its bias: %v", err)
	}
	if !strings.Contains(mg.Model.String(), "(query): Linear(in_features=128, out_features=128, bias=True)") {
		t.Error("module tree not restored")
	}
}

// Spec acceptance case 7: W = I₂, A = [[1, 2]], B = [[3], [4]], α = 0.5, r = 1
// → W' = I + 0.5·B·A = [[2.5, 3.0], [2.0, 5.0]].
func TestFuseLoRAMaths(t *testing.T) {
	m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: []nn.Named{{Name: "fc", Module: nn.NewLinear(2, 2, true)}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{g.MustAddNode(ir.CallModule, "", "fc", []any{x}, nil)}, nil)
	mg := &ir.MaseGraph{Graph: g, Model: m, InputNames: []string{"x"}}
	if _, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 1, Alpha: 0.5}); err != nil {
		t.Fatal(err)
	}
	set := func(name string, vals []float32, dims ...int) {
		if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(tensors.FromFlatDataAndDimensions(vals, dims...)); err != nil {
			t.Fatal(err)
		}
	}
	set("fc.linear.weight", []float32{1, 0, 0, 1}, 2, 2)
	set("fc.lora_a.weight", []float32{1, 2}, 1, 2)
	set("fc.lora_b.weight", []float32{3, 4}, 2, 1)
	if _, _, err := passes.FuseLoRA(mg); err != nil {
		t.Fatal(err)
	}
	w, _, err := m.ParamValues("fc.weight")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w, []float32{2.5, 3, 2, 5}) {
		t.Errorf("fused W = %v, want [2.5 3 2 5]", w)
	}
	if _, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 0}); err == nil || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("rank 0: %v", err)
	}
	// A rank past the bound, or one whose adapters would not fit, is refused
	// before any adapter is made (a rank of 10^9 ran out of memory).
	if _, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 1_000_000_000}); err == nil || !strings.Contains(err.Error(), "lora rank 1000000000 is out of range (allowed: 1 to 65536)") {
		t.Errorf("rank 1e9: %v", err)
	}
	if _, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: 1, Match: "nothing"}); err == nil || !strings.Contains(err.Error(), "no Linear") {
		t.Errorf("no match: %v", err)
	}
}
