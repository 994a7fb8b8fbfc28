package train

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// referenceStep is the training step as one GoMLX computation with GoMLX's
// Adam and in-graph clipping (the trainer's implementation before adamW):
// inputs are the batch and the learning rate; outputs the loss and norm.
func referenceStep(t *testing.T, mg *ir.MaseGraph, cfg Config) *model.Exec {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range mg.Graph.Placeholders() {
		names = append(names, p.Target)
	}
	exec, err := model.NewExec(be, mg.Model.Store, func(scope *model.Scope, ins []*graph.Node) []*graph.Node {
		g := ins[0].Graph()
		byName := map[string]*graph.Node{}
		for i, name := range names {
			byName[name] = ins[i]
		}
		vals, err := execute.Build(g, scope, mg, byName, execute.Mode{Training: true})
		if err != nil {
			panic(err)
		}
		loss := vals[mg.Graph.OutputNode()].([]any)[0].(*graph.Node)
		grads := scope.BuildTrainableVariablesGradientsGraph(loss)
		sq := graph.ScalarZero(g, loss.DType())
		for _, gr := range grads {
			sq = graph.Add(sq, graph.ReduceAllSum(graph.Square(gr)))
		}
		norm := graph.Sqrt(sq)
		coef := graph.Min(graph.ScalarOne(g, norm.DType()),
			graph.Div(graph.Scalar(g, norm.DType(), cfg.MaxGradNorm), graph.AddScalar(norm, 1e-6)))
		for i := range grads {
			grads[i] = graph.Mul(grads[i], coef)
		}
		optimizer.LearningRateVar(scope, loss.DType(), cfg.LearningRate).SetNodeValue(ins[len(names)])
		opt := optimizer.Adam().LearningRate(cfg.LearningRate).Betas(cfg.Beta1, cfg.Beta2).
			Epsilon(cfg.Epsilon).WeightDecay(cfg.WeightDecay).Done()
		opt.(interface {
			UpdateGraphWithGradients(*model.Scope, []*graph.Node, dtypes.DType)
		}).UpdateGraphWithGradients(scope, grads, loss.DType())
		return []*graph.Node{loss, norm}
	})
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// TestAdamWMatchesGoMLXAdam trains two copies of a model for a few steps,
// one with the trainer (clipping and AdamW in Go), one with GoMLX's Adam
// in the step graph, and compares losses, norms and parameters.
// Without weight decay, the embedding rows never looked up are skipped.
func TestAdamWMatchesGoMLXAdam(t *testing.T) {
	for _, decay := range []float64{0.01, 0} {
		t.Run(fmt.Sprintf("weight_decay=%g", decay), func(t *testing.T) { testAdamWMatchesGoMLXAdam(t, decay) })
	}
}

func testAdamWMatchesGoMLXAdam(t *testing.T, decay float64) {
	cfg := DefaultConfig()
	cfg.LearningRate, cfg.WeightDecay, cfg.MaxGradNorm = 3e-3, decay, 0.1 // clipping active
	cfg.Freeze = []string{"bert.embeddings.position_embeddings"}
	mine, ref := tinyBert(t), tinyBert(t)
	tr, err := New(mine, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := SetFrozen(ref.Model, cfg.Freeze); err != nil {
		t.Fatal(err)
	}
	if err := ref.Model.Store.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		t.Fatal(err)
	}
	step := referenceStep(t, ref, cfg)
	for i, b := range toyBatches(5, 6, 8, 8) {
		lr := cfg.LearningRate * float64(6-i) / 6
		loss, norm, err := tr.Step(b, lr)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := step.Call(b["input_ids"], b["attention_mask"], b["labels"], tensors.FromScalar(float32(lr)))
		if err != nil {
			t.Fatal(err)
		}
		refLoss := float64(tensors.MustCopyFlatData[float32](outs[0])[0])
		refNorm := float64(tensors.MustCopyFlatData[float32](outs[1])[0])
		if math.Abs(loss-refLoss) > 1e-5 || math.Abs(norm-refNorm) > 1e-5*refNorm {
			t.Errorf("step %d: loss %v, norm %v; GoMLX Adam: %v, %v", i, loss, norm, refLoss, refNorm)
		}
		if norm <= cfg.MaxGradNorm {
			t.Errorf("step %d: norm %v, want clipping (> %v)", i, norm, cfg.MaxGradNorm)
		}
	}
	// The embedding tables went through the sparse (lookup) gradients.
	for _, name := range []string{"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight"} {
		v := mine.Model.Store.GetVariable(nn.StorePath(name))
		if st := tr.step.(*fusedStep).opt.state[v]; st == nil || st.acc == nil || slices.Index(st.live, false) < 0 {
			t.Errorf("%s: no lookup gradients, or no row left out", name)
		}
	}
	for _, p := range mine.Model.Parameters() {
		got, _, err := mine.Model.ParamValues(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := ref.Model.ParamValues(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		for j := range want {
			if d := math.Abs(float64(got[j] - want[j])); d > 1e-5 {
				t.Errorf("%s[%d] = %v, GoMLX Adam %v", p.Name, j, got[j], want[j])
				break
			}
		}
	}
}

// BenchmarkAdamWApply times the fused AdamW loop on bert-tiny's 3.9M-entry
// word-embedding table (all cores).
func BenchmarkAdamWApply(b *testing.B) {
	const n = 30522 * 128
	p, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range p {
		p[i], g[i] = float32(i%1000)*1e-3, float32(i%777)*1e-4
	}
	c := adamConsts{coef: 1, b1: 0.9, b2: 0.999, nb1: 0.1, nb2: 0.001, debias1: 10, debias2: 1000, eps: 1e-8, lr: 5e-5}
	for b.Loop() {
		parallelChunks(n, chunk, func(lo, hi int) { c.apply(p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi]) })
	}
}

// TestAdamWApplyVecMatchesScalar checks that the SIMD loop (when built)
// gives bit-identical results to the scalar one.
func TestAdamWApplyVecMatchesScalar(t *testing.T) {
	const n = 1000
	for _, withGrad := range []bool{true, false} {
		for _, decay := range []float32{0, 0.01} {
			c := adamConsts{coef: 0.7, b1: 0.9, b2: 0.999, nb1: 0.1, nb2: 1 - float32(0.999), debias1: 3.1, debias2: 51.3, eps: 1e-8, lr: 1e-3, decay: decay}
			var p, g, m, v [2][]float32
			for k := range 2 {
				p[k], g[k], m[k], v[k] = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range n {
					x := float32(i)
					p[k][i], g[k][i], m[k][i], v[k][i] = float32(math.Sin(float64(x))), float32(math.Cos(float64(x*1.3)))*1e-2, float32(math.Sin(float64(x*0.7)))*1e-3, float32(i%13)*1e-6
				}
				if !withGrad {
					g[k] = nil
				}
			}
			c.apply(p[0], g[0], m[0], v[0])
			c.applyScalar(p[1], g[1], m[1], v[1])
			for i := range n {
				if p[0][i] != p[1][i] || m[0][i] != m[1][i] || v[0][i] != v[1][i] {
					t.Fatalf("grad=%v decay=%v element %d: apply (%v, %v, %v), scalar (%v, %v, %v)", withGrad, decay, i,
						p[0][i], m[0][i], v[0][i], p[1][i], m[1][i], v[1][i])
				}
			}
		}
	}
}
