package train

import (
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/passes"
)

// tinyBertNoDropout is a two-layer tinyBert with both dropout
// probabilities 0.
func tinyBertNoDropout(t *testing.T) *ir.MaseGraph {
	t.Helper()
	return tinyBertWith(t, 5, func(c *models.BertConfig) {
		c.NumHiddenLayers, c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 2, 0, 0
	})
}

// stepsWith trains a fresh graph from build for n steps with the given
// trainer and returns each step's loss and every parameter afterwards.
func stepsWith(t *testing.T, kind string, build func(t *testing.T) *ir.MaseGraph, cfg Config, n int) ([]float64, map[string][]float32) {
	t.Helper()
	mg := build(t)
	cfg.Trainer = kind
	tr, err := New(mg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Kind() != kind {
		t.Fatalf("trainer %q, want %q", tr.Kind(), kind)
	}
	batches := toyBatches(11, 5, 4, 8)
	var losses []float64
	for i := range n {
		loss, _, err := tr.Step(batches[i%len(batches)], cfg.LearningRateAt(i, n))
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, loss)
	}
	params := map[string][]float32{}
	for _, p := range mg.Model.Parameters() {
		v, _, err := mg.Model.ParamValues(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		params[p.Name] = v
	}
	return losses, params
}

// TestGraphTrainerMatchesFused: the device-resident graph step and the
// fused host step give the same losses over 20 steps and the same
// parameters after them, and neither moves a frozen parameter.
func TestGraphTrainerMatchesFused(t *testing.T) {
	withLoRA := func(t *testing.T) *ir.MaseGraph {
		mg, _, err := passes.InsertLoRA(tinyBertNoDropout(t), passes.LoRAArgs{Rank: 4, Alpha: 8, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		return mg
	}
	for _, tc := range []struct {
		name   string
		build  func(t *testing.T) *ir.MaseGraph
		freeze []string
		decay  float64
		clip   float64
	}{
		{"dropout off", tinyBertNoDropout, nil, 0, 1},
		{"dropout off, clipping at every step", tinyBertNoDropout, nil, 0, 0.01},
		{"dropout off, weight decay, frozen embeddings", tinyBertNoDropout, []string{"bert.embeddings"}, 0.01, 1},
		{"LoRA", withLoRA, nil, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.LearningRate, cfg.WarmupSteps, cfg.WeightDecay, cfg.Freeze, cfg.MaxGradNorm = 2e-3, 3, tc.decay, tc.freeze, tc.clip
			fusedLoss, fusedParams := stepsWith(t, FusedTrainer, tc.build, cfg, 20)
			graphLoss, graphParams := stepsWith(t, GraphTrainer, tc.build, cfg, 20)
			for i := range fusedLoss {
				if d := math.Abs(fusedLoss[i] - graphLoss[i]); d > 1e-4*math.Abs(fusedLoss[i]) {
					t.Errorf("step %d: loss %.7f (fused) vs %.7f (graph)", i+1, fusedLoss[i], graphLoss[i])
				}
			}
			fresh := tc.build(t)
			onGo := goBackend(t)
			worst, where, moved := 0.0, "", 0
			for name, f := range fusedParams {
				g := graphParams[name]
				allowed := paramTolerance(onGo, name, cfg.LearningRate, 20)
				for j := range f {
					// The difference in units of what is allowed: 1 is the bound.
					d := math.Abs(float64(f[j]-g[j])) / allowed(float64(f[j]))
					if d > worst {
						worst, where = d, fmt.Sprintf("%s[%d]: %g vs %g", name, j, f[j], g[j])
					}
				}
				start, _, err := fresh.Model.ParamValues(name)
				if err != nil {
					t.Fatal(err)
				}
				frozen := false
				for _, p := range tc.freeze {
					frozen = frozen || len(name) > len(p) && name[:len(p)+1] == p+"."
				}
				if frozen && (!slices.Equal(start, f) || !slices.Equal(start, g)) {
					t.Errorf("frozen %s moved", name)
				}
				if !slices.Equal(start, g) {
					moved++
				}
			}
			if named := slices.ContainsFunc(slices.Collect(maps.Keys(fusedParams)), zeroGradient); !named {
				t.Errorf("no parameter is named as a zero-gradient key bias: zeroGradient no longer matches BERT's names")
			}
			if len(fusedParams) == 0 || moved == 0 {
				t.Fatalf("%d parameters, %d moved by the graph trainer", len(fusedParams), moved)
			}
			t.Logf("largest parameter difference: %.2g of the bound (%s)", worst, where)
			if worst > 1 {
				t.Errorf("parameters differ by %.2g times the bound: %s", worst, where)
			}
		})
	}
}

// goBackend says whether the tests' default backend is the Go one.
func goBackend(t *testing.T) bool {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	return backend.IsGo(be)
}

// paramTolerance is how far the two trainers' values of parameter name may
// lie apart after steps steps at learning rate lr, as a function of the
// fused trainer's value. On the Go backend both run the same kernels:
// 1e-4 relative (values below 1e-2 count as 1e-2). On a compiling backend
// (XLA) the two programs round differently, and AdamW, which divides each
// gradient by its own running size, turns rounding noise into steps of up
// to lr: the attention key biases, whose true gradient is zero (a bias
// added to every key shifts each query's scores by one constant, which the
// softmax removes), may drift by 2·lr a step; every other parameter gets
// 1e-4 relative plus lr/100.
func paramTolerance(onGo bool, name string, lr float64, steps int) func(v float64) float64 {
	relative := func(v float64) float64 { return 1e-4 * max(math.Abs(v), 1e-2) }
	switch {
	case onGo:
		return relative
	case zeroGradient(name):
		return func(float64) float64 { return 2 * lr * float64(steps) }
	default:
		return func(v float64) float64 { return relative(v) + lr/100 }
	}
}

// zeroGradient says whether name is a BERT attention key bias, a parameter
// whose true gradient is zero.
func zeroGradient(name string) bool {
	return strings.Contains(name, ".attention.self.key.") && strings.HasSuffix(name, "bias")
}

// TestTrainingLoopReleasesBuffers trains 100 steps with each trainer, the
// garbage collector off (no finalizer frees what a trainer forgot), and
// checks that the live device buffers stay flat after the first steps.
func TestTrainingLoopReleasesBuffers(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string][]LogEntry{}
	for _, kind := range []string{FusedTrainer, GraphTrainer} {
		t.Run(kind, func(t *testing.T) {
			mg := tinyBert(t)
			cfg := DefaultConfig()
			cfg.Trainer, cfg.LogEvery, cfg.Epochs = kind, 10, 1
			tr, err := New(mg, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Five batches, each seen 20 times: on the Go backend a batch's
			// tensors become shared host buffers that live as long as the
			// batch (the caller's), so fresh batches would grow the count.
			some := toyBatches(1, 5, 4, 8)
			var batches []Batch
			for i := range 100 {
				batches = append(batches, some[i%len(some)])
			}
			var at5, at100 int64
			progress := progressFunc(func(step int) {
				switch step {
				case 5:
					at5, _ = backend.LiveBuffers(be)
				case 100:
					at100, _ = backend.LiveBuffers(be)
				}
			})
			h, err := tr.Train(func(int) Batches { return seqOf(batches) }, len(batches), progress)
			if err != nil {
				t.Fatal(err)
			}
			if at100 != at5 {
				t.Errorf("live buffers %d after step 5, %d after step 100", at5, at100)
			}
			if h.Steps != 100 || len(h.Log) != 10 || math.IsNaN(h.FinalLoss) {
				t.Errorf("history: %d steps, %d logs, final loss %v", h.Steps, len(h.Log), h.FinalLoss)
			}
			if h.Compiles != 1 {
				t.Errorf("%d training compiles for one batch shape, want 1", h.Compiles)
			}
			logs[kind] = h.Log
			if _, err := tr.Evaluate(seqOf(batches[:3])); err != nil {
				t.Fatal(err)
			}
			before, _ := backend.LiveBuffers(be)
			tr.Close()
			if after, _ := backend.LiveBuffers(be); kind == GraphTrainer && after >= before {
				t.Errorf("Close freed no buffer (%d live before, %d after): the optimizer state stays", before, after)
			}
		})
	}
	// The logged window means agree: the fused step sums its losses on the
	// host, the graph step on the device.
	fused, graph := logs[FusedTrainer], logs[GraphTrainer]
	for i := range min(len(fused), len(graph)) {
		if d := math.Abs(fused[i].Loss - graph[i].Loss); d > 1e-3*math.Abs(fused[i].Loss) || fused[i].Step != graph[i].Step {
			t.Errorf("log %d: fused step %d loss %v, graph step %d loss %v", i, fused[i].Step, fused[i].Loss, graph[i].Step, graph[i].Loss)
		}
	}
}

// progressFunc is a Progress that calls f after each step.
type progressFunc func(step int)

func (f progressFunc) OnStep(step, total int, loss float64) { f(step) }
func (f progressFunc) OnLog(LogEntry)                       {}
