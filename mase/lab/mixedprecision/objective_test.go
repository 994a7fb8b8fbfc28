package mixedprecision

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/search"
)

// runTrial runs o on one trial of a new study and returns the finished trial.
func runTrial(t *testing.T, o *Objective, sampler search.Sampler) search.FrozenTrial {
	t.Helper()
	st := newStudy(t, sampler)
	if err := st.Optimize(context.Background(), o.Run, 1, 0); err != nil {
		t.Fatal(err)
	}
	ts, err := st.Trials()
	if err != nil || len(ts) != 1 {
		t.Fatalf("trials %v: %v", ts, err)
	}
	if ts[0].State != search.Complete {
		t.Fatalf("trial %s: %s", ts[0].State, ts[0].Message)
	}
	return ts[0]
}

// The cost figure: all integer 8/4 is 8 storage bits (MASE: 12), all float
// 32; the objective is accuracy − λ·bits and the attributes agree with
// CalculateAvgBits on the trial's graph.
func TestObjectiveBits(t *testing.T) {
	s := smallSession(t)
	base, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Evaluate(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		choices            []string
		bits               string
		wantW, wantMASE    float64
		quantized, classes string
	}{
		{"integer/storage", []string{"integer"}, "", 8, 12, "14/14", "LinearInteger:14"},
		{"integer/mase", []string{"integer"}, BitsMASE, 12, 12, "14/14", "LinearInteger:14"},
		{"float", []string{"linear"}, BitsStorage, 32, 32, "0/14", "Linear:14"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObjective(Space{Choices: tc.choices}, s)
			o.Train, o.Lambda, o.Bits = false, 0.01, tc.bits
			var graph *ir.MaseGraph
			o.OnModel = func(_ *search.Trial, mg *ir.MaseGraph) { graph = mg }
			ft := runTrial(t, o, search.NewRandomSampler(1))
			a := ft.UserAttrs
			acc := a["accuracy"].(float64)
			if tc.choices[0] == "linear" && acc != m.Accuracy {
				t.Errorf("float accuracy %v, base %v", acc, m.Accuracy)
			}
			if math.Abs(ft.Value-(acc-0.01*tc.wantW)) > 1e-12 {
				t.Errorf("value %v, want %v − 0.01·%v", ft.Value, acc, tc.wantW)
			}
			if a["w_avg_bits"] != tc.wantW || a["mase_w_avg_bits"] != tc.wantMASE || a["quantized_layers"] != tc.quantized {
				t.Errorf("attrs %v", a)
			}
			wantStorage := 32.0
			if tc.choices[0] == "integer" {
				wantStorage = 8
			}
			if a["w_storage_bits"] != wantStorage || a["data_storage_bits"] != wantStorage {
				t.Errorf("storage attrs %v", a)
			}
			lt := a["layer_types"].(map[string]int)
			if got := classes(lt); got != tc.classes {
				t.Errorf("layer_types %v, want %s", lt, tc.classes)
			}
			// The figures are CalculateAvgBits' on the trial's graph, whose
			// metadata still records the quantized precision.
			if graph == nil {
				t.Fatal("OnModel not called")
			}
			r, _, err := passes.CalculateAvgBits(graph)
			if err != nil {
				t.Fatal(err)
			}
			if r.WeightStorageBits != a["w_storage_bits"] || r.DataAvgBits != a["mase_data_avg_bits"] || r.WeightAvgBits != tc.wantMASE {
				t.Errorf("CalculateAvgBits %+v, attrs %v", r, a)
			}
			if tc.choices[0] == "integer" {
				n := graph.Graph.Node("bert_encoder_layer_0_attention_self_query")
				w := n.Meta.Common.Args.Get("weight")
				if w == nil || w.Type != "integer" || !slices.Equal(w.Precision, []int{8, 4}) {
					t.Errorf("query weight metadata %+v, want integer [8 4]", w)
				}
			}
		})
	}
}

// classes renders a count map as "A:1,B:2" in key order.
func classes(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

// Training: a mixed trial fine-tunes the quantized graph (its weights move
// away from the checkpoint's) and completes; the checkpoint is untouched.
func TestObjectiveTrains(t *testing.T) {
	s := smallSession(t)
	base, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	const w = "bert.encoder.layer.0.attention.self.query.weight"
	before, _, err := base.Model.ParamValues(w)
	if err != nil {
		t.Fatal(err)
	}
	o := NewObjective(FormatSpace("minifloat_ieee"), s)
	o.Lambda = 0.001
	var after []float32
	o.OnModel = func(_ *search.Trial, mg *ir.MaseGraph) { after, _, _ = mg.Model.ParamValues(w) }
	sampler := &scriptSampler{pick: func(_ string, order int, choices []any) any { return choices[order%2] }}
	ft := runTrial(t, o, sampler)
	a := ft.UserAttrs
	if a["quantized_layers"] != "7/14" || a["layer_types"].(map[string]int)["LinearMinifloatIEEE"] != 7 {
		t.Errorf("attrs %v", a)
	}
	if _, ok := a["mase_w_avg_bits"]; ok {
		t.Error("MASE's figure recorded for minifloat (its precision list holds None)")
	}
	acc := a["accuracy"].(float64)
	if acc < 0 || acc > 1 || math.Abs(ft.Value-(acc-0.001*a["w_avg_bits"].(float64))) > 1e-12 {
		t.Errorf("value %v, accuracy %v, attrs %v", ft.Value, acc, a)
	}
	if slices.Equal(before, after) {
		t.Error("the query weights did not change: no fine-tuning")
	}
	again, _ := s.Load()
	if v, _, _ := again.Model.ParamValues(w); !slices.Equal(v, before) {
		t.Error("the trial changed the checkpoint")
	}
}

func TestObjectiveValidate(t *testing.T) {
	s := &compress.Session{Checkpoint: "x"}
	for _, tc := range []struct {
		o    *Objective
		want string
	}{
		{&Objective{Space: Task1Space()}, "Session is nil"},
		{&Objective{Space: Space{}, Session: s}, "Choices is empty"},
		{&Objective{Space: Task1Space(), Session: s, Bits: "real"}, `Bits "real" is unknown (allowed: storage, mase)`},
		{&Objective{Space: Task1Space(), Session: s, Lambda: math.NaN()}, "Lambda NaN is not finite"},
		{&Objective{Space: AllFormatsSpace(), Session: s, Bits: BitsMASE}, "cannot count minifloat_ieee, minifloat_denorm, log, block_fp, block_minifloat, block_log, ternary"},
	} {
		err := tc.o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.o, err, tc.want)
		}
		if _, err := tc.o.Run(ask(t, newStudy(t, search.NewRandomSampler(1)))); err == nil {
			t.Errorf("%+v: Run accepted it", tc.o)
		}
	}
	for _, sp := range []Space{Task1Space(), FormatSpace("binary"), FormatSpace("mxint8")} {
		if err := (&Objective{Space: sp, Session: s, Bits: BitsMASE}).Validate(); err != nil {
			t.Errorf("%v with MASE bits: %v", sp.Choices, err)
		}
	}
	if o := NewObjective(Task1Space(), s); !o.Train || o.Bits != BitsStorage || o.Lambda != 0 {
		t.Errorf("NewObjective %+v", o)
	}
}
