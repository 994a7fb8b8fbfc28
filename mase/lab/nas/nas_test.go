package nas

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/search"
)

// fixedTrial runs build inside a one-trial study whose grid sampler
// forces the given parameters.
func fixedTrial(t *testing.T, grid map[string][]any, build func(tr *search.Trial) error) search.FrozenTrial {
	t.Helper()
	g, err := search.NewGridSampler(grid, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := search.NewStudy(search.Config{Direction: search.Maximize, Sampler: g})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) { return 0, build(tr) }, 1, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Trials()
	if ts[0].State != search.Complete {
		t.Fatalf("trial %v: %s", ts[0].State, ts[0].Message)
	}
	return ts[0]
}

// pick returns a grid with single values for the four indices and every
// layer choice set to choice.
func pick(t *testing.T, s Space, layers, heads, hidden, inter int, choice string) map[string][]any {
	t.Helper()
	grid, err := s.Grid(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name := range grid {
		grid[name] = []any{choice}
	}
	grid[NumLayersParam], grid[NumHeadsParam], grid[HiddenSizeParam], grid[IntermediateSizeParam] = []any{layers}, []any{heads}, []any{hidden}, []any{inter}
	return grid
}

func countLayers(m *nn.Model) int {
	n := 0
	for _, nm := range m.Modules() {
		if strings.HasPrefix(nm.Path, "bert.encoder.layer.") && strings.Count(nm.Path, ".") == 3 {
			n++
		}
	}
	return n
}

func TestSpaceSizes(t *testing.T) {
	s := Tutorial5Space()
	archs, total := s.Size()
	if archs != 300 {
		t.Errorf("%d architectures, want 300 (spec §9 item 27)", archs)
	}
	s.LikeMASE = true
	if _, total := s.Size(); total.Int64() != 288*512+12*8192 {
		t.Errorf("LikeMASE: %v trials, want %d", total, 288*512+12*8192)
	}
	// With the fix, 8-layer models have 8·4+1 square Linears: far more.
	if total.BitLen() < 40 {
		t.Errorf("full space %v trials: expected more than 2^40", total)
	}
	grid, err := Tutorial5Space().Grid(nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := search.NewGridSampler(grid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 300 {
		t.Errorf("default grid %d points, want 300", g.Len())
	}
	// 8 layers × (4 + 2 when 512/512) + the pooler, plus the 4 indices.
	if len(grid) != 8*6+1+4 {
		t.Errorf("grid has %d names", len(grid))
	}
	// The whole space: 300 architectures × 2^49 layer choices.
	full, err := Tutorial5Space().Grid(Tutorial5Space().LinearChoices)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := search.NewGridSampler(full, 0)
	if err != nil {
		t.Fatalf("full grid: %v", err)
	}
	if gf.Len() != 300<<49 {
		t.Errorf("full grid %d points, want 300·2^49", gf.Len())
	}
}

func TestBuildAppliesLayersAndHeads(t *testing.T) {
	s := Tutorial5Space()
	var got Architecture
	var model *nn.Model
	ft := fixedTrial(t, pick(t, s, 2, 1, 3, 0, KeepLinear), func(tr *search.Trial) (err error) {
		model, got, err = s.Build(tr, 1)
		return err
	})
	if got.Config.NumHiddenLayers != 8 || got.Config.NumAttentionHeads != 4 || got.Config.HiddenSize != 384 || got.Config.IntermediateSize != 512 {
		t.Errorf("config %+v", got.Config)
	}
	if n := countLayers(model); n != 8 {
		t.Errorf("%d encoder layers, want 8", n)
	}
	if len(got.SquareLinears) != 33 || len(got.Identities) != 0 {
		t.Errorf("%d square Linears (%d identities), want 33", len(got.SquareLinears), len(got.Identities))
	}
	if len(ft.Params) != 4+33 {
		t.Errorf("%d params suggested", len(ft.Params))
	}
	if _, ok := ft.Params["bert.encoder.layer.7.attention.self.query_type"]; !ok {
		t.Errorf("params %v", ft.Params)
	}
	if ft.Params[HiddenSizeParam] != 3 {
		t.Errorf("hidden_size is suggested as an index: %v", ft.Params[HiddenSizeParam])
	}
}

func TestBuildLikeMASEIgnoresLayersAndHeads(t *testing.T) {
	s := Tutorial5Space()
	s.LikeMASE = true
	var got Architecture
	var model *nn.Model
	fixedTrial(t, pick(t, s, 2, 3, 4, 0, Identity), func(tr *search.Trial) (err error) {
		model, got, err = s.Build(tr, 1)
		return err
	})
	if got.Config.NumHiddenLayers != 2 || got.Config.NumAttentionHeads != 2 || countLayers(model) != 2 {
		t.Errorf("LikeMASE config %+v", got.Config)
	}
	// hidden = intermediate = 512: 13 square Linears, all Identity.
	if len(got.Identities) != 13 {
		t.Errorf("%d identities, want 13", len(got.Identities))
	}
	for _, p := range got.Identities {
		if mod, _ := model.Module(p); mod.TypeName() != "Identity" {
			t.Errorf("%s is %s", p, mod.TypeName())
		}
	}
	mg, err := mase.NewMaseGraph(model, []string{"input_ids"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := models.DummyInput(model, []string{"input_ids"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := execute.Run(mg, in)
	if err != nil {
		t.Fatal(err)
	}
	if d := out[0].Shape().Dimensions; !slices.Equal(d, []int{2, 2}) {
		t.Errorf("logits shape %v", d)
	}
}

func TestSpaceValidate(t *testing.T) {
	for _, c := range []struct {
		edit func(*Space)
		want string
	}{
		{func(s *Space) { s.NumHeads = nil }, "num_heads has no values"},
		{func(s *Space) { s.HiddenSize = []int{128, -1} }, "hidden_size value -1 is not positive"},
		{func(s *Space) { s.HiddenSize = []int{100} }, "hidden_size 100 is not a multiple of num_heads 8"},
		{func(s *Space) { s.LinearChoices = []string{"Identity"} }, `unknown layer choice "Identity" (allowed: linear, identity)`},
		{func(s *Space) { s.Base = models.BertConfig{} }, "Space.Base is empty"},
	} {
		s := Tutorial5Space()
		c.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	if _, err := Tutorial5Space().Grid([]string{"conv"}); err == nil || !strings.Contains(err.Error(), `"conv"`) {
		t.Errorf("grid choice error %v", err)
	}
}

// TestSamplersOnTheSpace: the three samplers search the same space (the grid
// offers both layer choices), and every trial's suggestions are in it.
func TestSamplersOnTheSpace(t *testing.T) {
	s := Tutorial5Space()
	grid, err := s.Grid(s.LinearChoices)
	if err != nil {
		t.Fatal(err)
	}
	g, err := search.NewGridSampler(grid, 3)
	if err != nil {
		t.Fatal(err)
	}
	tpe, err := search.NewTPESampler(search.TPEOptions{Seed: 3, NStartupTrials: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, sampler := range map[string]search.Sampler{"grid": g, "random": search.NewRandomSampler(3), "tpe": tpe} {
		st, err := search.NewStudy(search.Config{Direction: search.Maximize, Sampler: sampler})
		if err != nil {
			t.Fatal(err)
		}
		// A cheap stand-in for accuracy: fewer parameters score higher.
		identities := 0
		err = st.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
			_, arch, err := s.Build(tr, 1)
			identities += len(arch.Identities)
			return -float64(arch.Parameters), err
		}, 6, 0)
		if err != nil {
			t.Fatal(err)
		}
		if identities == 0 {
			t.Errorf("%s: no Identity in 6 trials", name)
		}
		ts, _ := st.Trials()
		for _, tr := range ts {
			if tr.State != search.Complete {
				t.Errorf("%s trial %d: %v %s", name, tr.Number, tr.State, tr.Message)
			}
		}
	}
}

// tinySession trains on 64 SST-2 sentences cut to 32 tokens.
func tinySession(t *testing.T) *compress.Session {
	t.Helper()
	cfg := finetune.FromScratch()
	cfg.Epochs = 1
	s, err := compress.NewSession(finetune.Options{Dataset: "sst2", Limit: 64, EvalLimit: 64, MaxLen: 32, Seed: 1}, cfg)
	if err != nil {
		t.Skipf("SST-2 or the tokenizer not available: %v", err)
	}
	return s
}

// smallSpace keeps the trial models small enough for unit tests.
func smallSpace() Space {
	s := Tutorial5Space()
	s.NumLayers, s.NumHeads, s.HiddenSize, s.IntermediateSize = []int{1, 2}, []int{2}, []int{32, 64}, []int{64}
	s.Base.VocabSize = 30522
	return s
}

func TestObjectiveTrainsCompressesAndSavesTheBest(t *testing.T) {
	sess := tinySession(t)
	best := filepath.Join(t.TempDir(), "best")
	obj := &Objective{Space: smallSpace(), Session: sess, Seed: 5, BestPath: best, PostEpochs: 1, Compression: Tutorial5Compression()}
	var last *ir.MaseGraph
	obj.OnModel = func(_ *search.Trial, mg *ir.MaseGraph) { last = mg }
	st, err := search.NewStudy(search.Config{Direction: search.Maximize, Sampler: search.NewRandomSampler(2)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Optimize(context.Background(), obj.Run, 2, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Trials()
	for _, tr := range ts {
		if tr.State != search.Complete {
			t.Fatalf("trial %d %v: %s", tr.Number, tr.State, tr.Message)
		}
		for _, k := range []string{"accuracy", "compressed_accuracy", "post_trained_accuracy", "parameters", "hidden_size", "seconds"} {
			if _, ok := tr.UserAttrs[k]; !ok {
				t.Errorf("trial %d has no %q attribute: %v", tr.Number, k, tr.UserAttrs)
			}
		}
		if tr.Value != tr.UserAttrs["post_trained_accuracy"] || tr.Value < 0 || tr.Value > 1 {
			t.Errorf("trial %d value %v attrs %v", tr.Number, tr.Value, tr.UserAttrs)
		}
	}
	if last == nil {
		t.Fatal("OnModel not called")
	}
	nQuantized := 0
	for _, nm := range last.Model.Modules() {
		if _, ok := nm.Module.(*quantized.Linear); ok {
			nQuantized++
		}
	}
	if nQuantized == 0 {
		t.Error("the compressed model has no quantized Linear")
	}
	// The saved best model reloads with its own architecture and scores
	// the best trial's value.
	bt, _ := st.BestTrial()
	mg, err := checkpoint.Import(best)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sess.Evaluate(mg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Accuracy != bt.Value {
		t.Errorf("saved best model scores %v, best trial %v", m.Accuracy, bt.Value)
	}
	if got := fmt.Sprint(bt.UserAttrs["saved_as_best"]); got != best {
		t.Errorf("saved_as_best %q", got)
	}
}
