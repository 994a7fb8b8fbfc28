package compress

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/train"
)

// smallSession is a session on 64 SST-2 sentences with an untrained
// bert-tiny checkpoint: enough to exercise every step quickly.
func smallSession(t *testing.T) *Session {
	t.Helper()
	m, err := models.NewBertTiny(3)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(t.TempDir(), "start")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{}); err != nil {
		t.Fatal(err)
	}
	s, err := NewSession(finetune.Options{Dataset: "sst2", Limit: 64, EvalLimit: 64, MaxLen: 32, Seed: 1}, finetune.FromScratch())
	if err != nil {
		t.Skipf("SST-2 or the tokenizer not available: %v", err)
	}
	s.Checkpoint = base
	return s
}

func TestWidthSweepStartsEachPointFresh(t *testing.T) {
	s := smallSession(t)
	before, err := os.ReadFile(s.Checkpoint + ".safetensors")
	if err != nil {
		t.Fatal(err)
	}
	mg, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Evaluate(mg)
	if err != nil {
		t.Fatal(err)
	}
	var seen []WidthPoint
	points, err := s.WidthSweep([]int{4, 32}, func(p WidthPoint) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || len(seen) != 2 || points[0].Width != 4 || points[0].FracWidth != 2 || points[1].FracWidth != 16 {
		t.Fatalf("points %+v", points)
	}
	// Q(32, 16) is far finer than the logit differences: at most one of 64 predictions may flip.
	if d := points[1].PTQ - base.Accuracy; d > 1.0/64+1e-9 || d < -1.0/64-1e-9 {
		t.Errorf("PTQ at 32 bits %.4f, float %.4f", points[1].PTQ, base.Accuracy)
	}
	for _, p := range points {
		for _, a := range []float64{p.PTQ, p.QAT} {
			if a < 0 || a > 1 {
				t.Errorf("accuracy %v out of [0,1]", a)
			}
		}
	}
	after, _ := os.ReadFile(s.Checkpoint + ".safetensors")
	if string(after) != string(before) {
		t.Error("the sweep changed the starting checkpoint")
	}
	if c := WidthChart(points, base.Accuracy); len(c.Series) != 3 || len(c.Series[0].X) != 2 {
		t.Errorf("chart %+v", c)
	}
}

func TestSessionErrors(t *testing.T) {
	var s Session
	if _, err := s.Load(); err == nil {
		t.Error("Load without a checkpoint")
	}
	if _, err := (&Session{}).FineTune(nil, "x"); err == nil {
		t.Error("FineTune without data")
	}
	if _, err := (&Session{Checkpoint: "x", Train: &data.Pretokenized{}}).WidthSweep([]int{40}, nil); err == nil {
		t.Error("width 40 accepted")
	}
	_ = train.Metrics{}
}

func TestSparsitySweep(t *testing.T) {
	s := smallSession(t)
	points, err := s.SparsitySweep([]float64{0.5}, []string{"random", "l1-norm"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || points[0].Method != "random" || points[1].Method != "l1-norm" {
		t.Fatalf("points %+v", points)
	}
	c := SparsityChart(points, 0.5, true)
	if len(c.Series) != 5 || c.Series[4].Name != "unpruned baseline" || len(c.Series[4].X) != 1 {
		t.Errorf("chart series %+v", c.Series)
	}
	// The pruned graph really is half zeros.
	mg, _, err := s.Prune(PruneConfig(0.5, "l1-norm", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, info, err := passes.ReportWeightSparsity(mg)
	if err != nil {
		t.Fatal(err)
	}
	if sp := info["sparsity"].(float64); sp < 0.49 || sp > 0.51 {
		t.Errorf("weight sparsity %v, want 0.5", info)
	}
}

func TestBestWidth(t *testing.T) {
	if _, ok := BestWidth(nil); ok {
		t.Error("BestWidth of no points")
	}
	points := []WidthPoint{{Width: 4, QAT: 0.5}, {Width: 8, QAT: 0.81}, {Width: 16, QAT: 0.83}, {Width: 32, QAT: 0.83}, {Width: 24, QAT: 0.83}}
	if b, ok := BestWidth(points); !ok || b.Width != 16 {
		t.Errorf("best %+v: want width 16 (highest QAT accuracy, narrowest on a tie)", b)
	}
}

// TestWidthSweepBestSavesTheBestModel: the exported checkpoint is the best
// width's QAT model (its Linears quantized at that width).
func TestWidthSweepBestSavesTheBestModel(t *testing.T) {
	s := smallSession(t)
	best := filepath.Join(t.TempDir(), "best")
	points, top, err := s.WidthSweepBest([]int{4, 16}, best, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := BestWidth(points); top != want {
		t.Errorf("best %+v, want %+v", top, want)
	}
	mg, err := checkpoint.Import(best)
	if err != nil {
		t.Fatal(err)
	}
	quantized := 0
	for _, r := range passes.QuantizeSummary(mg) {
		quantized += r.ByType["LinearInteger"]
	}
	if quantized != 14 {
		t.Fatalf("the saved model has %d LinearInteger layers, want 14", quantized)
	}
	m, err := s.Evaluate(mg)
	if err != nil {
		t.Fatal(err)
	}
	if m.Accuracy != top.QAT {
		t.Errorf("saved model's accuracy %.4f, the sweep's %.4f", m.Accuracy, top.QAT)
	}
}
