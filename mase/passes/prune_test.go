package passes_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/prune"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
)

// linearGraph builds x → fc_i(x) → ... for Linears of the given sizes
// (no bias), a MaseGraph over a fresh model.
func linearGraph(t *testing.T, mods ...nn.Leaf) *ir.MaseGraph {
	t.Helper()
	var kids []nn.Named
	for i, l := range mods {
		kids = append(kids, nn.Named{Name: fmt.Sprintf("fc%d", i), Module: l})
	}
	m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: kids}, 3)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	var x any = g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	for _, k := range kids {
		x = g.MustAddNode(ir.CallModule, "", k.Name, []any{x}, nil)
	}
	g.MustAddNode(ir.Output, "output", "output", []any{x}, nil)
	return &ir.MaseGraph{Graph: g, Model: m, InputNames: []string{"x"}}
}

func setValues(t *testing.T, m *nn.Model, name string, vals []float32, dims ...int) {
	t.Helper()
	if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(tensors.FromFlatDataAndDimensions(vals, dims...)); err != nil {
		t.Fatal(err)
	}
}

func maskOf(t *testing.T, m *nn.Model, name string) []float32 {
	t.Helper()
	v, ok := m.Buffer(name)
	if !ok {
		t.Fatalf("no buffer %s", name)
	}
	return tensors.MustCopyFlatData[float32](v.MustValue())
}

func pruned(info passes.Info) []passes.PrunedModule { return info["pruned"].([]passes.PrunedModule) }

// Spec acceptance case 24: local l1 on w = [0.1, −0.2, …, −0.8].
func TestPruneL1LocalSpecCase(t *testing.T) {
	w := []float32{0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8}
	for _, tc := range []struct {
		s         float64
		threshold float64
		zeros     int
	}{{0.5, 0.45, 4}, {0.3, 0.31, 3}, {0.9, 0.73, 7}, {0.0, 0.1, 1}} {
		mg := linearGraph(t, nn.NewLinear(4, 2, false))
		setValues(t, mg.Model, "fc0.weight", w, 2, 4)
		_, info, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: tc.s, Method: "l1-norm", Scope: "local"}})
		if err != nil {
			t.Fatal(err)
		}
		p := pruned(info)[0]
		if math.Abs(p.Threshold-tc.threshold) > 1e-6 {
			t.Errorf("s=%v: threshold %v, want %v", tc.s, p.Threshold, tc.threshold)
		}
		if z := p.Total - p.Kept; z != tc.zeros || info["weight_zeros"] != tc.zeros {
			t.Errorf("s=%v: %d zeros, want %d", tc.s, z, tc.zeros)
		}
		mask := maskOf(t, mg.Model, "fc0.weight_mask")
		for i, v := range w {
			if keep := float64(abs(v)) > p.Threshold; keep != (mask[i] == 1) {
				t.Errorf("s=%v: mask[%d] = %v for %v", tc.s, i, mask[i], v)
			}
		}
		if tc.s == 0.5 && !slices.Equal(mask, []float32{0, 0, 0, 0, 1, 1, 1, 1}) {
			t.Errorf("s=0.5 keeps %v, want {0.5, −0.6, 0.7, −0.8}", mask)
		}
	}
}

func abs(v float32) float32 { return float32(math.Abs(float64(v))) }

// Spec acceptance case 25, and the other MASE validation messages.
func TestPruneConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"weight": map[string]any{"sparsity": 1}}, "Sparsity must be a float"},
		{map[string]any{"weight": map[string]any{"sparsity": 0.5, "method": "l1"}}, "Unsupported pruning method l1. Please choose from ['random', 'l1-norm']"},
		{map[string]any{"activation": map[string]any{"sparsity": 1.5}}, "Sparsity must be between 0 and 1. Got 1.5"},
		{map[string]any{"weight": map[string]any{"sparsity": 0.5, "scope": "layer"}}, "Unsupported pruning scope layer. Please choose from ['local', 'global']"},
		{map[string]any{"weight": map[string]any{"sparsity": 0.5, "granularity": "channel"}}, "Please choose from ['elementwise']"},
		{map[string]any{"weight": map[string]any{"sparsity": 0.5, "ratio": 0.1}}, `unknown key "ratio" (allowed: sparsity, method, scope, granularity)`},
		{map[string]any{"weights": map[string]any{}}, `unknown key "weights" (allowed: weight, activation, seed)`},
		{map[string]any{"weight": map[string]any{"sparsity": map[string]any{"fc0": 0.5}, "scope": "global"}}, "Layer-wise budgets only possible with a local scope!"},
		{map[string]any{"weight": map[string]any{"sparsity": map[string]any{"fc0": 1}}}, "sparsity of fc0: Sparsity must be a float"},
		{map[string]any{}, `neither a "weight" nor an "activation"`},
	} {
		if _, err := passes.ParsePruneArgs(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// JSON keeps 1 and 1.0 apart.
	if _, err := passes.PruneArgsFromJSON([]byte(`{"weight": {"sparsity": 1}}`)); err == nil || !strings.Contains(err.Error(), "Sparsity must be a float. Got int (1; write 1.0)") {
		t.Errorf("JSON int sparsity: %v", err)
	}
	args, err := passes.PruneArgsFromJSON([]byte(`{"weight": {"sparsity": 1.0, "method": "l1-norm"}, "activation": {"sparsity": 5e-1}, "seed": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if args.Weight.Sparsity != 1 || args.Weight.Method != "l1-norm" || args.Activation.Sparsity != 0.5 || args.Seed != 3 {
		t.Errorf("decoded %+v %+v", args.Weight, args.Activation)
	}
	// Checks against the graph.
	mg := linearGraph(t, nn.NewLinear(4, 2, false))
	for _, tc := range []struct {
		args passes.PruneArgs
		want string
	}{
		{passes.PruneArgs{}, "nothing to do"},
		{passes.PruneArgs{Weight: &passes.PruneConfig{Layers: map[string]float64{"fc9": 0.5}}}, "Node fc9 not found in the graph! (the Linear-like modules are: fc0)"},
		{passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.5, Layers: map[string]float64{"fc0": 0.5}}}, "not both"},
		{passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: -0.1}}, "Sparsity must be between 0 and 1"},
		{passes.PruneArgs{Activation: &passes.PruneConfig{Sparsity: 0.1, Method: "l1-norm", Scope: "global"}}, "AddCommonMetadata with AddValue"},
	} {
		if _, _, err := passes.PruneTransform(mg, tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if mg.Model.IsParametrized("fc0", "") || len(mg.Model.Buffers()) != 0 {
		t.Error("a failed pass changed the model")
	}
	// No Linear-like module: LoRALinear is not one.
	lora, _ := nn.NewLoRALinear(4, 2, false, 1, 1, 0)
	if _, _, err := passes.PruneTransform(linearGraph(t, lora), passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.5}}); err == nil || !strings.Contains(err.Error(), "no Linear-like module") {
		t.Errorf("LoRA-only graph: %v", err)
	}
}

// Property: on weights without ties, l1 at sparsity s prunes exactly
// ⌊s·(n−1)⌋ + 1 entries (pos = s·(n−1); the threshold lies in
// [|w|₍⌊pos⌋₎, |w|₍⌈pos⌉₎), so the strict > prunes ranks 0 … ⌊pos⌋). That
// is round(s·n) up to one: s·n − s < zeros ≤ s·n + 1 − s.
func TestPruneL1CountProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := 0; trial < 20; trial++ {
		out, in := 1+rng.IntN(40), 1+rng.IntN(60)
		n := out * in
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		s := rng.Float64()
		if trial == 0 {
			s = 0.5
		}
		mg := linearGraph(t, nn.NewLinear(in, out, false))
		setValues(t, mg.Model, "fc0.weight", w, out, in)
		_, info, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: s, Method: "l1-norm"}})
		if err != nil {
			t.Fatal(err)
		}
		p := pruned(info)[0]
		zeros := p.Total - p.Kept
		lo, _, _ := prune.QuantilePos(n, s)
		if zeros != lo+1 {
			t.Errorf("n=%d s=%.4f: %d zeros, want ⌊s(n−1)⌋+1 = %d", n, s, zeros, lo+1)
		}
		if sn := s * float64(n); float64(zeros) <= sn-s-1e-9 || float64(zeros) > sn+1-s+1e-9 || math.Abs(float64(zeros)-math.Round(sn)) > 1 {
			t.Errorf("n=%d s=%.4f: %d zeros, s·n = %.2f", n, s, zeros, sn)
		}
	}
}

// Global scope: one threshold over both layers' |W|.
func TestPruneL1Global(t *testing.T) {
	mg := linearGraph(t, nn.NewLinear(8, 8, false), nn.NewLinear(8, 4, false))
	rng := rand.New(rand.NewPCG(4, 4))
	small, large := make([]float32, 64), make([]float32, 32)
	var all []float32
	for i := range small {
		small[i] = float32(rng.NormFloat64() * 0.1)
	}
	for i := range large {
		large[i] = float32(rng.NormFloat64())
	}
	setValues(t, mg.Model, "fc0.weight", small, 8, 8)
	setValues(t, mg.Model, "fc1.weight", large, 4, 8)
	for _, v := range append(slices.Clone(small), large...) {
		all = append(all, abs(v))
	}
	_, info, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.5, Method: "l1-norm", Scope: "global"}})
	if err != nil {
		t.Fatal(err)
	}
	ps := pruned(info)
	want := prune.Quantile(all, 0.5)
	if ps[0].Threshold != float64(want) || ps[1].Threshold != float64(want) {
		t.Errorf("thresholds %v, %v, want both %v", ps[0].Threshold, ps[1].Threshold, want)
	}
	if info["weight_zeros"] != 48 { // ⌊0.5·95⌋ + 1
		t.Errorf("%v zeros in all, want 48", info["weight_zeros"])
	}
	if z0, z1 := ps[0].Total-ps[0].Kept, ps[1].Total-ps[1].Kept; z0 <= 32 || z1 >= 16 {
		t.Errorf("global pruning should prune the small layer more: %d of 64, %d of 32", z0, z1)
	}
	// Random scope global is the same as local: each entry with probability s.
	mg = linearGraph(t, nn.NewLinear(100, 100, false))
	_, info, err = passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.3, Method: "random", Scope: "global"}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a := pruned(info)[0].Achieved; math.Abs(a-0.3) > 0.03 || !math.IsNaN(pruned(info)[0].Threshold) {
		t.Errorf("random 0.3 achieved %v", a)
	}
}

// Activation masking zeroes the expected inputs in a forward: l1 over the
// whole batch tensor, random about s of them (in eval mode too).
func TestPruneActivations(t *testing.T) {
	eye := make([]float32, 64)
	for i := 0; i < 8; i++ {
		eye[i*9] = 1
	}
	run := func(mg *ir.MaseGraph, x *tensors.Tensor) []float32 {
		out, err := execute.Run(mg, map[string]*tensors.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0])
	}
	mg := linearGraph(t, nn.NewLinear(8, 8, false))
	setValues(t, mg.Model, "fc0.weight", eye, 8, 8)
	rng := rand.New(rand.NewPCG(5, 5))
	xs := make([]float32, 16)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	x := tensors.FromFlatDataAndDimensions(xs, 2, 8)
	if got := run(mg, x); !slices.Equal(got, xs) {
		t.Fatal("identity Linear changed its input")
	}
	_, info, err := passes.PruneTransform(mg, passes.PruneArgs{Activation: &passes.PruneConfig{Sparsity: 0.5, Method: "l1-norm"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := pruned(info)[0]; p.ActivationMethod != "l1-norm" || p.WeightMethod != "" || len(mg.Model.Buffers()) != 0 {
		t.Errorf("activation-only pruning: %+v", p)
	}
	got := run(mg, x)
	th := prune.Quantile(absAll(xs), 0.5)
	zeros := 0
	for i, v := range got {
		if abs(xs[i]) > th {
			if v != xs[i] {
				t.Errorf("kept input %d changed: %v → %v", i, xs[i], v)
			}
		} else if v != 0 {
			t.Errorf("input %d (%v ≤ %v) not pruned", i, xs[i], th)
		}
		if v == 0 {
			zeros++
		}
	}
	if zeros != 8 {
		t.Errorf("%d of 16 inputs pruned, want 8", zeros)
	}
	// Random: fresh masks in eval mode, about 30%.
	mg = linearGraph(t, nn.NewLinear(8, 8, false))
	setValues(t, mg.Model, "fc0.weight", eye, 8, 8)
	if _, _, err := passes.PruneTransform(mg, passes.PruneArgs{Activation: &passes.PruneConfig{Sparsity: 0.3, Method: "random"}, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	ones := make([]float32, 8000)
	for i := range ones {
		ones[i] = 1
	}
	got = run(mg, tensors.FromFlatDataAndDimensions(ones, 1000, 8))
	zeros = 0
	for _, v := range got {
		if v == 0 {
			zeros++
		}
	}
	if frac := float64(zeros) / 8000; math.Abs(frac-0.3) > 0.03 {
		t.Errorf("random activation pruning dropped %.3f, want about 0.3", frac)
	}
}

func absAll(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = abs(x)
	}
	return out
}

// qLinear stands for a quantized Linear: MaseOp "linear", a "weight"
// parameter fetched with c.Param, rounded to multiples of 1/8.
type qLinear struct{ *nn.Linear }

func (q *qLinear) TypeName() string         { return "QLinearTest" }
func (q *qLinear) MaseOp() (string, string) { return "module_related_func", "linear" }
func (q *qLinear) Forward(c *nn.Call, args []any, _ map[string]any) (any, error) {
	w, err := c.Param("weight")
	if err != nil {
		return nil, err
	}
	w = graph.DivScalar(graph.Round(graph.MulScalar(w, 8)), 8)
	return nn.LinearOp(args[0].(*graph.Node), w), nil
}

// A Linear-like leaf other than nn.Linear is pruned through the same
// parametrization, without knowing about it; pruning twice ANDs the masks.
func TestPruneLinearLikeAndRepeat(t *testing.T) {
	mg := linearGraph(t, &qLinear{nn.NewLinear(4, 1, false)})
	setValues(t, mg.Model, "fc0.weight", []float32{1, -2, 3, -4}, 1, 4)
	if _, _, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.3, Method: "l1-norm"}}); err != nil {
		t.Fatal(err)
	}
	out, err := execute.Run(mg, map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions([]float32{1, 1, 1, 1}, 1, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[float32](out[0]); !slices.Equal(got, []float32{-3}) { // −2 + 3 − 4 (|1| pruned)
		t.Errorf("pruned QLinear = %v, want [-3]", got)
	}
	// Random 0.5 afterwards keeps the l1 zero.
	if _, _, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.5}, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if mask := maskOf(t, mg.Model, "fc0.weight_mask"); mask[0] != 0 {
		t.Errorf("second pruning revived the first's zero: %v", mask)
	}
	if n := len(mg.Model.Parametrizations("fc0", "weight")); n != 1 {
		t.Errorf("%d parametrizations after pruning twice, want 1 (the mask is updated)", n)
	}
}

var bertLinears = []string{
	"bert.encoder.layer.0.attention.self.query", "bert.encoder.layer.0.attention.self.key", "bert.encoder.layer.0.attention.self.value",
	"bert.encoder.layer.0.attention.output.dense", "bert.encoder.layer.0.intermediate.dense", "bert.encoder.layer.0.output.dense",
	"bert.encoder.layer.1.attention.self.query", "bert.encoder.layer.1.attention.self.key", "bert.encoder.layer.1.attention.self.value",
	"bert.encoder.layer.1.attention.output.dense", "bert.encoder.layer.1.intermediate.dense", "bert.encoder.layer.1.output.dense",
	"bert.pooler.dense", "classifier",
}

// Spec acceptance case 26 with Tutorial 4's configuration: 14 modules,
// exactly half of each weight kept, the masks and the zeros survive
// optimiser steps, the model still trains.
func TestPruneBertTiny(t *testing.T) {
	mg := bertGraph(t, []string{"input_ids", "attention_mask", "labels"})
	before := logits(t, mg)
	stored := map[string][]float32{}
	for _, p := range mg.Model.Parameters() {
		stored[p.Name], _, _ = mg.Model.ParamValues(p.Name)
	}
	var logBuf bytes.Buffer
	old := passes.Logger
	passes.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	defer func() { passes.Logger = old }()

	args, err := passes.ParsePruneArgs(map[string]any{
		"weight":     map[string]any{"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
		"activation": map[string]any{"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mg, info, err := passes.PruneTransform(mg, args)
	if err != nil {
		t.Fatal(err)
	}
	ps := pruned(info)
	if len(ps) != 14 {
		t.Fatalf("pruned %d modules, want 14", len(ps))
	}
	for i, p := range ps {
		if p.Module != bertLinears[i] {
			t.Errorf("module %d = %s, want %s", i, p.Module, bertLinears[i])
		}
		want := map[int]int{128 * 128: 8192, 512 * 128: 32768, 2 * 128: 128}[p.Total]
		if p.Kept != want || want == 0 {
			t.Errorf("%s keeps %d of %d, want %d", p.Module, p.Kept, p.Total, want)
		}
		if !strings.Contains(logBuf.String(), "Pruning module: "+strings.ReplaceAll(p.Module, ".", "_")) {
			t.Errorf("no log line for %s", p.Node)
		}
	}
	// The stored parameters are untouched; the outputs change.
	for _, p := range mg.Model.Parameters() {
		if now, _, _ := mg.Model.ParamValues(p.Name); !slices.Equal(now, stored[p.Name]) {
			t.Errorf("pruning changed the stored %s", p.Name)
		}
	}
	if after := logits(t, mg); slices.Equal(after, before) {
		t.Error("pruning left the logits unchanged")
	}
	rows, rep, err := passes.ReportWeightSparsity(mg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 14 || rep["zeros"] != rep["total"].(int)/2 || !rows[13].Masked {
		t.Errorf("sparsity report %v, %+v", rep, rows[13])
	}
	masks := map[string][]float32{}
	for _, b := range mg.Model.Buffers() {
		masks[b.Name] = tensors.MustCopyFlatData[float32](b.Variable.MustValue())
		if b.Variable.Trainable {
			t.Errorf("mask %s is trainable", b.Name)
		}
	}
	if len(masks) != 14 {
		t.Fatalf("%d mask buffers, want 14", len(masks))
	}

	// Train (weight decay on, so stored pruned entries move while the
	// effective ones must stay zero).
	cfg := train.DefaultConfig()
	cfg.WeightDecay = 0.01
	tr, err := train.New(mg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		loss, _, err := tr.Step(fullBatch(), 1e-3)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			t.Fatalf("step %d: loss %v", i, loss)
		}
	}
	for name, m := range masks {
		if now := maskOf(t, mg.Model, name); !slices.Equal(now, m) {
			t.Errorf("training changed %s", name)
		}
	}
	w, _, _ := mg.Model.ParamValues("classifier.weight")
	if slices.Equal(w, stored["classifier.weight"]) {
		t.Error("the classifier did not train")
	}
	rows, rep2, err := passes.ReportWeightSparsity(mg)
	if err != nil {
		t.Fatal(err)
	}
	if rep2["zeros"] != rep["zeros"] {
		t.Errorf("after training %v effective zeros, want %v", rep2["zeros"], rep["zeros"])
	}
	for _, r := range rows {
		mask := masks[r.Module+".weight_mask"]
		eff, err := mg.Model.EffectiveParam(modeltest.Backend(t), r.Module+".weight")
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range tensors.MustCopyFlatData[float32](eff) {
			if mask[i] == 0 && v != 0 {
				t.Fatalf("%s: pruned entry %d is %v after training", r.Module, i, v)
			}
		}
	}
}

// Per-layer sparsities prune only the named modules; the others keep no
// mask and no hook.
func TestPruneBertPerLayer(t *testing.T) {
	mg := bertGraph(t, nil)
	_, info, err := passes.PruneTransform(mg, passes.PruneArgs{
		Weight:     &passes.PruneConfig{Layers: map[string]float64{"classifier": 0.25, "bert.pooler.dense": 0.5}, Method: "l1-norm"},
		Activation: &passes.PruneConfig{Layers: map[string]float64{"classifier": 0.1}, Method: "random"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := pruned(info)
	if len(ps) != 2 || ps[0].Module != "bert.pooler.dense" || ps[1].Module != "classifier" {
		t.Fatalf("pruned %+v", ps)
	}
	if ps[0].ActivationMethod != "" || ps[1].ActivationMethod != "random" || ps[1].Total-ps[1].Kept != 64 { // ⌊0.25·255⌋+1
		t.Errorf("per-layer results %+v", ps)
	}
	for _, p := range bertLinears[:12] {
		if mg.Model.IsParametrized(p, "") || len(mg.Model.ForwardPreHooks(p)) != 0 {
			t.Errorf("%s was pruned", p)
		}
	}
}

// Baking writes mask ⊙ W into the weights and drops the masks; the
// outputs stay the same.
func TestBakePruneMasks(t *testing.T) {
	mg := linearGraph(t, nn.NewLinear(4, 2, false), nn.NewLinear(2, 2, false))
	setValues(t, mg.Model, "fc0.weight", []float32{0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8}, 2, 4)
	if _, _, err := passes.PruneTransform(mg, passes.PruneArgs{Weight: &passes.PruneConfig{Sparsity: 0.5, Method: "l1-norm"}}); err != nil {
		t.Fatal(err)
	}
	x := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 1, 4)}
	before, err := execute.Run(mg, x)
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := passes.BakePruneMasks(mg)
	if err != nil {
		t.Fatal(err)
	}
	if got := info["baked"].([]string); !slices.Equal(got, []string{"fc0", "fc1"}) {
		t.Errorf("baked %v", got)
	}
	if w, _, _ := mg.Model.ParamValues("fc0.weight"); !slices.Equal(w, []float32{0, 0, 0, 0, 0.5, -0.6, 0.7, -0.8}) {
		t.Errorf("baked weight %v", w)
	}
	if len(mg.Model.Buffers()) != 0 || mg.Model.IsParametrized("fc0", "") {
		t.Error("masks left after baking")
	}
	after, err := execute.Run(mg, x)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tensors.MustCopyFlatData[float32](before[0]), tensors.MustCopyFlatData[float32](after[0])) {
		t.Error("baking changed the output")
	}
}
