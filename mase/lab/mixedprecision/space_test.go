package mixedprecision

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/quant"
	"github.com/gomase/gomase/mase/search"
)

func TestSpaceValidate(t *testing.T) {
	for name, s := range map[string]Space{"task1": Task1Space(), "all": AllFormatsSpace(), "zero widths": {Choices: []string{"integer"}}} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, f := range Formats {
		if err := FormatSpace(f).Validate(); err != nil {
			t.Errorf("FormatSpace(%s): %v", f, err)
		}
	}
	for _, tc := range []struct {
		s    Space
		want string
	}{
		{Space{}, "Choices is empty (allowed: linear, integer"},
		{Space{Choices: []string{"linear", "LinearInteger"}}, `Choices[1] "LinearInteger" is not a choice (allowed: linear, integer`},
		{Space{Choices: []string{"integer", "integer"}}, `lists "integer" twice`},
		{Space{Choices: []string{"integer"}, Widths: []int{8, 0}}, "Widths[1] 0 is out of range (allowed: 1..32)"},
		{Space{Choices: []string{"integer"}, Widths: []int{8, 64}}, "Widths[1] 64 is out of range"},
		{Space{Choices: []string{"integer"}, Widths: []int{8, 8}}, "Widths lists 8 twice"},
		{Space{Choices: []string{"integer"}, FracWidths: []int{-1}}, "FracWidths[0] -1 is out of range"},
		{Space{Choices: []string{"integer"}, Widths: []int{4, 8}, FracWidths: []int{2, 6}}, "width 4 with frac_width 6"},
		{Space{Choices: []string{"integer"}, Width: 4, FracWidths: []int{2, 6}}, "allowed: fractional widths ≤ 4"},
		{Space{Choices: []string{"linear", "log"}, Widths: []int{8}}, `searched only for integer layers`},
		{Space{Choices: []string{"linear", "log"}, Width: 16}, "data_in_width 16 is out of range for log (allowed: 2..11)"},
		{Space{Choices: []string{"linear"}, Width: -8}, "Width -8 is out of range"},
	} {
		err := tc.s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.s, err, tc.want)
		}
	}
}

// Task 1 on bert-tiny: 14 type parameters, widths only for the integer
// layers, the quantized layers really quantized with the suggested widths
// and the original weights and biases.
func TestApplyTask1(t *testing.T) {
	mg := bertGraph(t, 5)
	widths, fracs := []int{8, 16, 32}, []int{2, 4, 8}
	layer := map[string]int{} // module path → index among the layers
	sampler := &scriptSampler{pick: func(name string, _ int, choices []any) any {
		switch {
		case strings.HasSuffix(name, "_type"):
			layer[strings.TrimSuffix(name, "_type")] = len(layer)
			if len(layer)%2 == 1 {
				return "integer"
			}
			return "linear"
		case strings.HasSuffix(name, "_frac_width"):
			return fracs[(layer[strings.TrimSuffix(name, "_frac_width")]/2)%3]
		case strings.HasSuffix(name, "_width"):
			return widths[(layer[strings.TrimSuffix(name, "_width")]/2+1)%3]
		}
		t.Errorf("unexpected parameter %s", name)
		return choices[0]
	}}
	before := map[string][]float32{}
	for _, nm := range mg.Model.Modules() {
		if _, ok := nm.Module.(*nn.Linear); ok {
			for _, p := range []string{"weight", "bias"} {
				v, _, err := mg.Model.ParamValues(nm.Path + "." + p)
				if err != nil {
					t.Fatal(err)
				}
				before[nm.Path+"."+p] = v
			}
		}
	}
	st := newStudy(t, sampler)
	tr := ask(t, st)
	out, sum, err := Task1Space().Apply(tr, mg)
	if err != nil {
		t.Fatal(err)
	}
	if out != mg {
		t.Error("Apply returned another graph")
	}
	if sum.Total != 14 || sum.Quantized != 7 || sum.String() != "Quantized layers: 7/14" {
		t.Errorf("summary %v (%+v)", sum, sum)
	}
	if got := tr.UserAttrs()["quantized_layers"]; got != "7/14" {
		t.Errorf("quantized_layers = %v", got)
	}
	params := tr.Params()
	if len(params) != 14+2*7 {
		t.Errorf("%d parameters, want 28: %v", len(params), params)
	}
	for _, name := range []string{"bert.encoder.layer.0.attention.self.query_type", "bert.encoder.layer.1.output.dense_type", "bert.pooler.dense_type", "classifier_type",
		"bert.encoder.layer.0.attention.self.query_width", "bert.encoder.layer.0.attention.self.query_frac_width"} {
		if _, ok := params[name]; !ok {
			t.Errorf("parameter %s missing: %v", name, slices.Sorted(maps.Keys(params)))
		}
	}
	if sum.Layers[0].Path != "bert.encoder.layer.0.attention.self.query" || sum.Layers[0].Node != "bert_encoder_layer_0_attention_self_query" {
		t.Errorf("first layer %+v", sum.Layers[0])
	}
	for i, l := range sum.Layers {
		mod, _ := mg.Model.Module(l.Path)
		if i%2 == 1 {
			if l.Choice != "linear" || l.Class != "Linear" || l.Width != 0 {
				t.Errorf("layer %d %+v, want linear", i, l)
			}
			if _, ok := mod.(*nn.Linear); !ok {
				t.Errorf("%s is %s, want a float Linear", l.Path, mod.TypeName())
			}
			if _, ok := params[l.Path+"_width"]; ok {
				t.Errorf("float layer %s suggested a width", l.Path)
			}
			continue
		}
		w, f := widths[(i/2+1)%3], fracs[(i/2)%3]
		if l.Choice != "integer" || l.Class != "LinearInteger" || l.Width != w || l.FracWidth != f ||
			params[l.Path+"_width"] != w || params[l.Path+"_frac_width"] != f {
			t.Errorf("layer %d %+v, params %v %v: want integer %d/%d", i, l, params[l.Path+"_width"], params[l.Path+"_frac_width"], w, f)
		}
		q, ok := mod.(*quantized.Linear)
		if !ok {
			t.Errorf("%s is %T, want a QuantizedLinear", l.Path, mod)
			continue
		}
		for _, s := range []*quant.Spec{q.Config.DataIn, q.Config.Weight, q.Config.Bias} {
			if s == nil || s.Format != "integer" || s.Width != w || s.FracWidth != f {
				t.Errorf("%s spec %+v, want integer %d/%d", l.Path, s, w, f)
			}
		}
		if !q.Bias {
			t.Errorf("%s lost its bias", l.Path)
		}
	}
	// Weights and biases are the original ones (MASE's constructor re-initialises the bias).
	for name, v := range before {
		got, _, err := mg.Model.ParamValues(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got, v) {
			t.Errorf("%s changed", name)
		}
	}
	if lt := LayerTypes(mg); lt["Linear"] != 7 || lt["LinearInteger"] != 7 || len(lt) != 2 {
		t.Errorf("LayerTypes = %v", lt)
	}
	if _, err := st.Tell(tr, 0.5, nil); err != nil {
		t.Fatal(err)
	}

	// Apply again on the quantized graph: the quantized layers count as
	// Linears (MASE's isinstance), and "linear" leaves them as they are.
	st2 := newStudy(t, &scriptSampler{pick: func(string, int, []any) any { return "linear" }})
	tr2 := ask(t, st2)
	_, sum2, err := FormatSpace("log").Apply(tr2, mg)
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Total != 14 || sum2.Quantized != 7 || len(tr2.Params()) != 14 {
		t.Errorf("second apply: %v, %d params", sum2, len(tr2.Params()))
	}
}

// Every format in one graph: the graph runs, common metadata works on the
// quantized layers (MASE's lookup fails there), and the bit counts are the
// formats' storage costs.
func TestApplyAllFormats(t *testing.T) {
	mg := bertGraph(t, 6)
	sampler := &scriptSampler{pick: func(name string, order int, _ []any) any { return Formats[order%len(Formats)] }}
	tr := ask(t, newStudy(t, sampler))
	mg, sum, err := AllFormatsSpace().Apply(tr, mg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Quantized != 14 || len(tr.Params()) != 14 {
		t.Fatalf("%v, params %v", sum, tr.Params())
	}
	bits := map[string]float64{"integer": 8, "minifloat_ieee": 8, "minifloat_denorm": 8, "log": 8, "block_fp": 8.5, "block_minifloat": 8.5,
		"block_log": 8.5, "binary": 1, "binary_scaling": 1, "binary_residual": 1, "ternary": 2, "mxint8": 8.25}
	var wBits, wN float64
	for i, l := range sum.Layers {
		if l.Choice != Formats[i%len(Formats)] {
			t.Errorf("layer %d: %+v", i, l)
		}
		if cls, _ := quant.LinearTypeName(l.Choice); l.Class != cls {
			t.Errorf("layer %d class %s, want %s", i, l.Class, cls)
		}
		mod, _ := mg.Model.Module(l.Path)
		q := mod.(*quantized.Linear)
		n := float64(q.InFeatures * q.OutFeatures)
		wBits += bits[l.Choice] * n
		wN += n
	}
	dummy, err := models.DummyInput(mg.Model, mg.InputNames, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.InitMetadata(mg); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: dummy}); err != nil {
		t.Fatal(err)
	}
	r, _, err := passes.CalculateAvgBits(mg)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.WeightStorageBits-wBits/wN) > 1e-12 || r.MASEAvailable {
		t.Errorf("storage bits %v, want %v; MASE available %v", r.WeightStorageBits, wBits/wN, r.MASEAvailable)
	}
	outs, err := execute.Run(mg, dummy)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		for _, v := range tensors.MustCopyFlatData[float32](o) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("non-finite output %v", o)
			}
		}
	}
}

func TestGrid(t *testing.T) {
	mg := bertGraph(t, 1)
	g, err := FormatSpace("integer").Grid(mg)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != 14 || !slices.Equal(g["classifier_type"], []any{"linear", "integer"}) {
		t.Errorf("grid %v", g)
	}
	sampler, err := search.NewGridSampler(g, 0)
	if err != nil || sampler.Len() != 1<<14 {
		t.Fatalf("grid sampler: %v", err)
	}
	// The grid lists every name Apply suggests.
	st := newStudy(t, sampler)
	if err := st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		_, sum, err := FormatSpace("integer").Apply(tr, mg)
		return float64(sum.Quantized), err
	}, 1, 0); err != nil {
		t.Fatal(err)
	}
	if ts, _ := st.Trials(); len(ts) != 1 || ts[0].State != search.Complete {
		t.Errorf("trials %+v", ts)
	}
	g, err = Task1Space().Grid(bertGraph(t, 1))
	if err != nil || len(g) != 42 || !slices.Equal(g["classifier_frac_width"], []any{2, 4, 8}) {
		t.Errorf("task 1 grid %v: %v", g, err)
	}
}

// A RandomSampler study with seed 1 draws the same parameters twice.
func TestRandomStudyReproducible(t *testing.T) {
	mg := bertGraph(t, 2)
	run := func() []map[string]any {
		st := newStudy(t, search.NewRandomSampler(1))
		var params []map[string]any
		for range 3 {
			tr := ask(t, st)
			if _, _, err := Task1Space().Apply(tr, mg); err != nil {
				t.Fatal(err)
			}
			params = append(params, tr.Params())
			if _, err := st.Tell(tr, 0, nil); err != nil {
				t.Fatal(err)
			}
		}
		return params
	}
	a := run()
	mg = bertGraph(t, 2)
	b := run()
	if len(a) != 3 || len(b) != 3 {
		t.Fatal("trials missing")
	}
	for i := range a {
		if len(a[i]) < 14 || len(a[i]) != len(b[i]) {
			t.Fatalf("trial %d: %d vs %d params", i, len(a[i]), len(b[i]))
		}
		for k, v := range a[i] {
			if b[i][k] != v {
				t.Errorf("trial %d %s: %v vs %v", i, k, v, b[i][k])
			}
		}
	}
	same := true
	for k, v := range a[0] {
		if a[1][k] != v {
			same = false
		}
	}
	if same {
		t.Error("trials 0 and 1 drew the same layer types")
	}
}

// TPE handles the conditional width parameters (suggested only by integer layers).
func TestTPEStudy(t *testing.T) {
	mg := bertGraph(t, 4)
	tpe, err := search.NewTPESampler(search.TPEOptions{Seed: 3, NStartupTrials: 4})
	if err != nil {
		t.Fatal(err)
	}
	st := newStudy(t, tpe)
	if err := st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		_, sum, err := Task1Space().Apply(tr, mg)
		return float64(sum.Quantized), err
	}, 8, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Trials()
	for _, ft := range ts {
		if ft.State != search.Complete {
			t.Errorf("trial %d %s: %s", ft.Number, ft.State, ft.Message)
		}
	}
	if len(ts) != 8 {
		t.Errorf("%d trials", len(ts))
	}
}

func TestApplyErrors(t *testing.T) {
	mg := bertGraph(t, 1)
	st := newStudy(t, search.NewRandomSampler(1))
	if _, _, err := Task1Space().Apply(nil, mg); err == nil {
		t.Error("nil trial accepted")
	}
	if _, _, err := (Space{}).Apply(ask(t, st), mg); err == nil || !strings.Contains(err.Error(), "Choices is empty") {
		t.Errorf("empty space: %v", err)
	}
	if _, _, err := Task1Space().Apply(ask(t, st), nil); err == nil {
		t.Error("nil graph accepted")
	}
	if LayerTypes(nil) != nil {
		t.Error("LayerTypes(nil)")
	}
}

// An enqueued EveryLayer trial quantizes every layer with the format, even
// under TPE.
func TestEveryLayer(t *testing.T) {
	mg := bertGraph(t, 1)
	space := FormatSpace(quant.Log)
	if _, err := space.EveryLayer(mg, quant.Binary); err == nil {
		t.Error("EveryLayer with a format outside the space")
	}
	params, err := space.EveryLayer(mg, quant.Log)
	if err != nil || len(params) != 14 || params["classifier_type"] != quant.Log {
		t.Fatalf("params %v, %v", params, err)
	}
	tpe, err := search.NewTPESampler(search.TPEOptions{Seed: 3, NStartupTrials: 2})
	if err != nil {
		t.Fatal(err)
	}
	st := newStudy(t, tpe)
	if _, err := st.EnqueueTrial(params); err != nil {
		t.Fatal(err)
	}
	if err := st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		_, sum, err := space.Apply(tr, bertGraph(t, 1))
		return float64(sum.Quantized), err
	}, 2, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Trials()
	if len(ts) != 2 || ts[0].Value != 14 {
		t.Errorf("first trial quantized %v layers, want all 14", ts[0].Value)
	}
}
