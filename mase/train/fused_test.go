package train

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

// lossAndGrads runs the train-mode forward (dropout on, RNG seeded) of mg
// on b and returns the loss, the logits and the gradient of every
// trainable parameter, in order. fusion selects the fused ops with
// hand-written gradients (nn.CustomGradient) or the decomposed GoMLX ops
// (GOMLX_FUSION=0).
func lossAndGrads(t *testing.T, mg *ir.MaseGraph, b Batch, fusion bool) [][]float32 {
	t.Helper()
	if fusion {
		t.Setenv("GOMLX_FUSION", "1")
	} else {
		t.Setenv("GOMLX_FUSION", "0")
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	if err := mg.Model.Store.SetRNGStateFromSeed(7); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range mg.Graph.Placeholders() {
		names = append(names, p.Target)
	}
	exec, err := model.NewExec(be, mg.Model.Store, func(scope *model.Scope, ins []*graph.Node) []*graph.Node {
		byName := map[string]*graph.Node{}
		for i, n := range names {
			byName[n] = ins[i]
		}
		vals, err := execute.Build(ins[0].Graph(), scope, mg, byName, execute.Mode{Training: true})
		if err != nil {
			panic(err)
		}
		out := vals[mg.Graph.OutputNode()].([]any)
		loss := out[0].(*graph.Node)
		return append([]*graph.Node{loss, out[1].(*graph.Node)}, scope.BuildTrainableVariablesGradientsGraph(loss)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	var args []any
	for _, n := range names {
		args = append(args, b[n])
	}
	outs, err := exec.Call(args...)
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]float32, len(outs))
	for i, o := range outs {
		res[i] = tensors.MustCopyFlatData[float32](o)
	}
	return res
}

// TestFusedOpsMatchDecomposed checks the fused forward and the hand-written
// gradients of bert-tiny's layers (linear, layer norm, GELU, attention with
// dropout) against GoMLX's decomposed ops and automatic gradients.
func TestFusedOpsMatchDecomposed(t *testing.T) {
	// seq 32 < head dim 64: the attention scales its scores; 80: it scales q.
	for _, tc := range []struct {
		frozen bool
		seq    int
	}{{false, 32}, {true, 80}} {
		frozen, seq := tc.frozen, tc.seq
		m, err := models.NewBertTiny(3)
		if err != nil {
			t.Fatal(err)
		}
		mg, err := mase.NewMaseGraph(m, []string{"input_ids", "attention_mask", "labels"})
		if err != nil {
			t.Fatal(err)
		}
		if frozen {
			if err := SetFrozen(m, []string{"bert.embeddings", "bert.encoder.layer.0.attention.self.key"}); err != nil {
				t.Fatal(err)
			}
		}
		const batch = 4
		ids, mask := make([]int32, batch*seq), make([]int32, batch*seq)
		for i := range ids {
			ids[i], mask[i] = int32(1000+(i*7919)%29000), 1
			if i%seq > seq-12+i/seq { // padding at the end of some rows
				mask[i] = 0
			}
		}
		b := Batch{"input_ids": tensors.FromFlatDataAndDimensions(ids, batch, seq),
			"attention_mask": tensors.FromFlatDataAndDimensions(mask, batch, seq),
			"labels":         tensors.FromFlatDataAndDimensions([]int32{0, 1, 1, 0}, batch)}
		fused := lossAndGrads(t, mg, b, true)
		ref := lossAndGrads(t, mg, b, false)
		if len(fused) != len(ref) {
			t.Fatalf("%d outputs fused, %d decomposed", len(fused), len(ref))
		}
		for i := range ref {
			what := "loss"
			switch {
			case i == 1:
				what = "logits"
			case i > 1:
				what = "gradient"
			}
			scale := 0.0
			for _, v := range ref[i] {
				scale = max(scale, math.Abs(float64(v)))
			}
			worst := 0.0
			for j := range ref[i] {
				worst = max(worst, math.Abs(float64(fused[i][j])-float64(ref[i][j])))
			}
			if worst > 1e-4*max(scale, 1e-3) || math.IsNaN(worst) {
				t.Errorf("frozen=%v output %d (%s, %d values): max |fused - decomposed| = %g (max |decomposed| %g)", frozen, i, what, len(ref[i]), worst, scale)
			}
		}
		t.Logf("frozen=%v: %d outputs compared, loss %v vs %v", frozen, len(ref), fused[0][0], ref[0][0])
	}
}
