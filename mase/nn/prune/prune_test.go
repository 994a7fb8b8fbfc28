package prune_test

import (
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
)

// oneLeaf returns a model with leaf at "layer" and a graph x → layer(x).
func oneLeaf(t *testing.T, leaf nn.Leaf) (*nn.Model, *ir.Graph) {
	t.Helper()
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "layer", Module: leaf}}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{g.MustAddNode(ir.CallModule, "", "layer", []any{x}, nil)}, nil)
	return m, g
}

func runGraph(t *testing.T, m *nn.Model, g *ir.Graph, mode execute.Mode, x *tensors.Tensor) []float32 {
	t.Helper()
	c, err := execute.CompileOn(modeltest.Backend(t), &ir.MaseGraph{Model: m, Graph: g}, mode, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Run(map[string]*tensors.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0])
}

func setParam(t *testing.T, m *nn.Model, name string, vals []float32, dims ...int) {
	t.Helper()
	if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(tensors.FromFlatDataAndDimensions(vals, dims...)); err != nil {
		t.Fatal(err)
	}
}

// A mask parametrization on Linear's weight: y = x (M⊙W)ᵀ + b, the stored
// weight unchanged, the mask a non-trainable buffer outside Parameters.
func TestMaskParametrizationLinear(t *testing.T) {
	m, g := oneLeaf(t, nn.NewLinear(3, 2, true))
	w := []float32{1, 2, 3, 4, 5, 6}
	setParam(t, m, "layer.weight", w, 2, 3)
	setParam(t, m, "layer.bias", []float32{10, 20}, 2)
	x := tensors.FromFlatDataAndDimensions([]float32{1, 1, 1}, 1, 3)
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{16, 35}) {
		t.Fatalf("plain Linear = %v", got)
	}
	nParams := m.NumParameters("")
	v, err := m.RegisterBuffer("layer.weight_mask", tensors.FromFlatDataAndDimensions([]float32{1, 0, 1, 0, 0, 1}, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if v.Trainable {
		t.Error("a buffer must not be trainable")
	}
	if err := m.RegisterParametrization("layer", "weight", &prune.Mask{Buffer: "layer.weight_mask"}); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{14, 26}) {
		t.Errorf("masked Linear = %v, want [14 26] (1+3+10, 6+20)", got)
	}
	if stored, _, _ := m.ParamValues("layer.weight"); !slices.Equal(stored, w) {
		t.Errorf("the stored weight changed: %v", stored)
	}
	if m.NumParameters("") != nParams || len(m.Parameters()) != 2 {
		t.Errorf("the buffer counts as a parameter: %d params", len(m.Parameters()))
	}
	if b := m.Buffers(); len(b) != 1 || b[0].Name != "layer.weight_mask" {
		t.Errorf("Buffers() = %+v", b)
	}
	eff, err := m.EffectiveParam(modeltest.Backend(t), "layer.weight")
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[float32](eff); !slices.Equal(got, []float32{1, 0, 3, 0, 0, 6}) {
		t.Errorf("effective weight = %v", got)
	}
	// Bake: the stored weight becomes the effective one, the
	// parametrization goes, the output stays.
	if err := m.BakeParametrizations(modeltest.Backend(t), "layer", "weight"); err != nil {
		t.Fatal(err)
	}
	if stored, _, _ := m.ParamValues("layer.weight"); !slices.Equal(stored, []float32{1, 0, 3, 0, 0, 6}) {
		t.Errorf("baked weight = %v", stored)
	}
	if m.IsParametrized("layer", "weight") {
		t.Error("still parametrized after baking")
	}
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{14, 26}) {
		t.Errorf("baked Linear = %v", got)
	}
	if err := m.RemoveBuffer("layer.weight_mask"); err != nil {
		t.Fatal(err)
	}
	if m.Store.GetVariable("/layer/weight_mask") != nil || len(m.Buffers()) != 0 {
		t.Error("RemoveBuffer left the variable")
	}
}

// The same mechanism reaches LoRALinear's nested base weight, and the
// gradient of a masked entry is zero.
func TestMaskParametrizationLoRA(t *testing.T) {
	lora, err := nn.NewLoRALinear(2, 2, false, 1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, g := oneLeaf(t, lora)
	setParam(t, m, "layer.linear.weight", []float32{1, 2, 3, 4}, 2, 2)
	if _, err := m.RegisterBuffer("layer.linear.weight_mask", tensors.FromFlatDataAndDimensions([]float32{0, 1, 1, 0}, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterParametrization("layer", "linear.weight", &prune.Mask{Buffer: "layer.linear.weight_mask"}); err != nil {
		t.Fatal(err)
	}
	x := tensors.FromFlatDataAndDimensions([]float32{1, 10}, 1, 2)
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{20, 3}) {
		t.Errorf("masked LoRALinear = %v, want [20 3] (B = 0)", got)
	}
	eff, err := m.EffectiveParam(modeltest.Backend(t), "layer.linear.weight")
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[float32](eff); !slices.Equal(got, []float32{0, 2, 3, 0}) {
		t.Errorf("effective LoRA base weight = %v", got)
	}
	// Gradient of sum(mask⊙W) w.r.t. W is the mask.
	grad, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
		c := &nn.Call{Graph: g, Scope: m.Scope("layer"), Path: "layer", Model: m}
		w, err := c.Param("linear.weight")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := c.RawParam("linear.weight")
		return graph.Gradient(graph.ReduceAllSum(w), raw)[0]
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(grad, []float32{0, 1, 1, 0}) {
		t.Errorf("gradient through the mask = %v, want the mask", grad)
	}
}

// Registration errors name what was wrong and what is allowed.
func TestParametrizationErrors(t *testing.T) {
	m, _ := oneLeaf(t, nn.NewLinear(3, 2, true))
	for _, tc := range []struct {
		err  error
		want string
	}{
		{m.RegisterParametrization("nope", "weight", &prune.Mask{}), `no module "nope"`},
		{m.RegisterParametrization("layer", "kernel", &prune.Mask{}), `no parameter "kernel" (it has: weight, bias)`},
		{m.RegisterForwardPreHook("", &prune.SparsifyInput{}), "not a leaf"},
		{func() error { _, err := m.RegisterBuffer("layer.weight", tensors.FromValue([]float32{1})); return err }(), `already has a parameter "weight"`},
		{func() error { _, err := m.RegisterBuffer("nope.mask", tensors.FromValue([]float32{1})); return err }(), "naming a module of the model"},
		{m.RemoveBuffer("layer.none"), `no buffer "layer.none"`},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", tc.err, tc.want)
		}
	}
	// A mask whose buffer is missing fails when the graph is built.
	m2, g2 := oneLeaf(t, nn.NewLinear(3, 2, true))
	if err := m2.RegisterParametrization("layer", "weight", &prune.Mask{Buffer: "layer.weight_mask"}); err != nil {
		t.Fatal(err)
	}
	c, err := execute.CompileOn(modeltest.Backend(t), &ir.MaseGraph{Model: m2, Graph: g2}, execute.Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions([]float32{1, 1, 1}, 1, 3)})
	if err == nil || !strings.Contains(err.Error(), `mask buffer "layer.weight_mask" does not exist`) {
		t.Errorf("missing buffer: %v", err)
	}
}

// A custom pre-hook rewrites the input; hooks list, encode, restore and
// are removed by ReplaceModule together with the buffers.
type scaleHook struct{ Factor float64 }

func (*scaleHook) Kind() string { return "test_scale" }
func (h *scaleHook) Apply(c *nn.Call, args []any, kw map[string]any) ([]any, map[string]any, error) {
	return []any{graph.MulScalar(args[0].(*graph.Node), h.Factor)}, kw, nil
}

func TestForwardPreHookAndRecords(t *testing.T) {
	nn.RegisterHookKind("test_scale", func() any { return &scaleHook{} })
	m, g := oneLeaf(t, nn.NewLinear(2, 1, false))
	setParam(t, m, "layer.weight", []float32{1, 1}, 1, 2)
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2}, 1, 2)
	if err := m.RegisterForwardPreHook("layer", &scaleHook{Factor: 3}); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{9}) {
		t.Errorf("hooked output = %v, want [9]", got)
	}
	if _, err := m.RegisterBuffer("layer.weight_mask", tensors.FromFlatDataAndDimensions([]float32{0, 1}, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterParametrization("layer", "weight", &prune.Mask{Buffer: "layer.weight_mask"}); err != nil {
		t.Fatal(err)
	}
	recs, err := m.HookRecords()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Kind != "mask" || recs[0].Param != "weight" || string(recs[0].Config) != `{"buffer":"layer.weight_mask"}` ||
		recs[1].Kind != "test_scale" || recs[1].Param != "" || string(recs[1].Config) != `{"Factor":3}` {
		t.Errorf("records = %+v", recs)
	}
	// Restore into a fresh model with the buffer.
	m2, g2 := oneLeaf(t, nn.NewLinear(2, 1, false))
	setParam(t, m2, "layer.weight", []float32{1, 1}, 1, 2)
	for _, b := range m.Buffers() {
		if _, err := m2.RegisterBuffer(b.Name, b.Variable.MustValue()); err != nil {
			t.Fatal(err)
		}
	}
	if err := m2.RestoreHooks(recs); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, m2, g2, execute.Mode{}, x); !slices.Equal(got, []float32{6}) {
		t.Errorf("restored output = %v, want [6] (3·2·1)", got)
	}
	bad := []nn.HookRecord{{Module: "layer", Param: "weight", Kind: "nope"}}
	if err := m2.RestoreHooks(bad); err == nil || !strings.Contains(err.Error(), `unknown kind "nope" (allowed: mask, sparsify_input, test_scale)`) {
		t.Errorf("unknown kind: %v", err)
	}
	bad = []nn.HookRecord{{Module: "layer", Kind: "mask", Config: []byte(`{"buffer":"x"}`)}}
	if err := m2.RestoreHooks(bad); err == nil || !strings.Contains(err.Error(), "not a forward pre-hook") {
		t.Errorf("mask as a pre-hook: %v", err)
	}
	bad = []nn.HookRecord{{Module: "layer", Param: "weight", Kind: "mask", Config: []byte(`{"buf":"x"}`)}}
	if err := m2.RestoreHooks(bad); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unknown field: %v", err)
	}
	// Removal.
	if n := m2.RemoveForwardPreHooks("layer", func(h nn.ForwardPreHook) bool { return h.Kind() == "test_scale" }); n != 1 {
		t.Errorf("removed %d pre-hooks", n)
	}
	if got := runGraph(t, m2, g2, execute.Mode{}, x); !slices.Equal(got, []float32{2}) {
		t.Errorf("output without the hook = %v, want [2]", got)
	}
	if n := m2.RemoveParametrizations("layer", "weight", nil); n != 1 || m2.IsParametrized("layer", "") {
		t.Errorf("removed %d parametrizations", n)
	}
	// ReplaceModule drops the old module's hooks and buffers.
	if err := m.ReplaceModule("layer", nn.NewLinear(2, 1, false), nil, 0); err != nil {
		t.Fatal(err)
	}
	if m.IsParametrized("layer", "") || len(m.ForwardPreHooks("layer")) != 0 || len(m.Buffers()) != 0 || m.Store.GetVariable("/layer/weight_mask") != nil {
		t.Error("ReplaceModule kept the old module's hooks or buffers")
	}
}

// SparsifyInput l1 on spec case 24's values through an Identity leaf, and
// QuantileGraph against the host Quantile on random data.
func TestSparsifyInputL1(t *testing.T) {
	m, g := oneLeaf(t, nn.NewIdentity())
	x := tensors.FromFlatDataAndDimensions([]float32{0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8}, 2, 4)
	for _, tc := range []struct {
		s     float64
		zeros int
	}{{0.5, 4}, {0.3, 3}, {0.9, 7}, {0.0, 1}, {1.0, 8}} {
		m.RemoveForwardPreHooks("layer", nil)
		if err := m.RegisterForwardPreHook("layer", &prune.SparsifyInput{Method: prune.MethodL1, Sparsity: tc.s}); err != nil {
			t.Fatal(err)
		}
		got := runGraph(t, m, g, execute.Mode{}, x)
		zeros := 0
		for i, v := range got {
			if v == 0 {
				zeros++
			} else if v != tensors.MustCopyFlatData[float32](x)[i] {
				t.Errorf("s=%v: kept value %d changed to %v", tc.s, i, v)
			}
		}
		if zeros != tc.zeros {
			t.Errorf("s=%v: %d zeros, want %d (%v)", tc.s, zeros, tc.zeros, got)
		}
	}
	// Fixed threshold (global scope).
	th := 0.45
	m.RemoveForwardPreHooks("layer", nil)
	if err := m.RegisterForwardPreHook("layer", &prune.SparsifyInput{Method: prune.MethodL1, Sparsity: 0.5, Threshold: &th}); err != nil {
		t.Fatal(err)
	}
	if got := runGraph(t, m, g, execute.Mode{}, x); !slices.Equal(got, []float32{0, 0, 0, 0, 0.5, -0.6, 0.7, -0.8}) {
		t.Errorf("fixed threshold: %v", got)
	}
	// Graph quantile = host quantile.
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, 1000)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	for _, q := range []float64{0, 0.1, 0.3, 0.5, 0.77, 1} {
		got, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
			return prune.QuantileGraph(graph.Const(g, tensors.FromFlatDataAndDimensions(vals, 10, 100)), q)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := prune.Quantile(vals, q); got[0] != want {
			t.Errorf("q=%v: graph quantile %v, host %v", q, got[0], want)
		}
	}
	if q := prune.Quantile([]float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, 0.3); math.Abs(float64(q)-0.31) > 1e-6 {
		t.Errorf("quantile 0.3 = %v, want 0.31", q)
	}
}

// Random input masks: about s of the elements dropped, fresh draws on
// every run, in eval mode too.
func TestSparsifyInputRandom(t *testing.T) {
	m, g := oneLeaf(t, nn.NewIdentity())
	if err := m.Store.SetRNGStateFromSeed(3); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterForwardPreHook("layer", &prune.SparsifyInput{Method: prune.MethodRandom, Sparsity: 0.3}); err != nil {
		t.Fatal(err)
	}
	ones := make([]float32, 10000)
	for i := range ones {
		ones[i] = 1
	}
	c, err := execute.CompileOn(modeltest.Backend(t), &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var prev []float32
	for run := 0; run < 2; run++ {
		out, err := c.Run(map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(ones, 100, 100)})
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](out[0])
		zeros := 0
		for _, v := range got {
			if v == 0 {
				zeros++
			} else if v != 1 {
				t.Fatalf("kept value rescaled to %v", v)
			}
		}
		if frac := float64(zeros) / 10000; math.Abs(frac-0.3) > 0.03 {
			t.Errorf("run %d: dropped %.3f, want about 0.3", run, frac)
		}
		if slices.Equal(got, prev) {
			t.Error("the random mask did not change between forwards")
		}
		prev = got
	}
	// More than one positional argument is rejected, as in MASE.
	h := &prune.SparsifyInput{Method: prune.MethodL1, Sparsity: 0.5}
	if _, _, err := h.Apply(&nn.Call{}, []any{nil, nil}, nil); err == nil || !strings.Contains(err.Error(), "allows exactly one") {
		t.Errorf("two arguments: %v", err)
	}
	h.Method = "l1"
	if _, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
		_, _, err := h.Apply(&nn.Call{Graph: g}, []any{graph.Const(g, []float32{1})}, nil)
		if err == nil || !strings.Contains(err.Error(), `unknown method "l1" (allowed: random, l1-norm)`) {
			t.Errorf("method l1: %v", err)
		}
		return graph.Const(g, []float32{0})
	}); err != nil {
		t.Fatal(err)
	}
}

// OrderStatistic is exact on ties, signs, zeros and infinities.
func TestOrderStatistic(t *testing.T) {
	m, _ := oneLeaf(t, nn.NewIdentity())
	rng := rand.New(rand.NewPCG(7, 7))
	cases := [][]float32{
		{3},
		{2, -1},
		{0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8},
		{1, 1, 1, 0, 0, -1, -1, float32(math.Inf(1)), float32(math.Inf(-1)), 5e-45, -5e-45, 1e30},
	}
	big := make([]float32, 3001)
	for i := range big {
		big[i] = float32(math.Round(rng.NormFloat64()*20) / 4) // many ties
	}
	cases = append(cases, big)
	wide := make([]float32, 2000)
	for i := range wide {
		wide[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
	}
	cases = append(cases, wide)
	for ci, vals := range cases {
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		ranks := []int{0, len(vals) / 3, len(vals) / 2, len(vals) - 1}
		for _, r := range ranks {
			got, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
				return prune.OrderStatistic(graph.Const(g, vals), r)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != sorted[r] {
				t.Errorf("case %d rank %d: %v, want %v", ci, r, got[0], sorted[r])
			}
		}
		for _, q := range []float64{0, 0.25, 0.5, 0.9, 1} {
			got, err := modeltest.RunOnce(t, m, func(g *graph.Graph) *graph.Node {
				return prune.QuantileGraph(graph.Const(g, vals), q)
			})
			if err != nil {
				t.Fatal(err)
			}
			want := prune.Quantile(vals, q)
			if got[0] != want && !(math.IsNaN(float64(got[0])) && math.IsNaN(float64(want))) {
				t.Errorf("case %d q=%v: quantile %v, want %v", ci, q, got[0], want)
			}
		}
	}
}
