package nn_test

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// runLeaf executes one leaf module on inputs through a one-node MaseGraph.
func runLeaf(t *testing.T, leaf nn.Leaf, inputs ...*tensors.Tensor) []float32 {
	t.Helper()
	m, err := nn.NewModel(&nn.Container{Type: "Root", Kids: []nn.Named{{Name: "layer", Module: leaf}}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	feed := map[string]*tensors.Tensor{}
	var args []any
	for i, in := range inputs {
		name := []string{"x", "y"}[i]
		args = append(args, g.MustAddNode(ir.Placeholder, name, name, nil, nil))
		feed[name] = in
	}
	out := g.MustAddNode(ir.CallModule, "", "layer", args, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{out}, nil)
	run, err := execute.Compile(m, g, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Run(feed)
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](res[0])
}

func near(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > tol {
			t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestLayerNormMatchesFormula(t *testing.T) {
	x := []float32{1, 2, 3, 4, -1, 0, 1, 10}
	got := runLeaf(t, &nn.LayerNorm{Dim: 4, Eps: 1e-12}, tensors.FromFlatDataAndDimensions(x, 2, 4))
	var want []float64
	for r := 0; r < 2; r++ {
		row := x[r*4 : r*4+4]
		mean, vr := 0.0, 0.0
		for _, v := range row {
			mean += float64(v) / 4
		}
		for _, v := range row {
			vr += (float64(v) - mean) * (float64(v) - mean) / 4
		}
		for _, v := range row {
			want = append(want, (float64(v)-mean)/math.Sqrt(vr+1e-12))
		}
	}
	near(t, "layernorm", got, want, 1e-5)
}

func TestActivations(t *testing.T) {
	x := []float32{-3, -0.5, 0, 0.7, 2}
	in := tensors.FromFlatDataAndDimensions(x, 5)
	var gelu, tanh, relu []float64
	for _, v := range x {
		f := float64(v)
		gelu = append(gelu, 0.5*f*(1+math.Erf(f/math.Sqrt2)))
		tanh = append(tanh, math.Tanh(f))
		relu = append(relu, math.Max(f, 0))
	}
	near(t, "gelu", runLeaf(t, nn.NewGELU("GELU"), in), gelu, 1e-6)
	near(t, "tanh", runLeaf(t, nn.NewTanh(), in), tanh, 1e-6)
	near(t, "relu", runLeaf(t, nn.NewReLU(), in), relu, 0)
	near(t, "dropout (eval)", runLeaf(t, &nn.Dropout{P: 0.9}, in), []float64{-3, -0.5, 0, float64(float32(0.7)), 2}, 0)
	sm := runLeaf(t, nn.NewSoftmax(-1), in)
	sum := 0.0
	for _, v := range sm {
		sum += float64(v)
	}
	if math.Abs(sum-1) > 1e-6 || sm[4] < sm[3] {
		t.Errorf("softmax %v", sm)
	}
}

func TestEmbeddingAndCrossEntropy(t *testing.T) {
	e := nn.NewEmbedding(5, 3)
	e.PaddingIdx = 0
	out := runLeaf(t, e, tensors.FromValue([]int32{0, 4}))
	if out[0] != 0 || out[1] != 0 || out[2] != 0 || out[3] == 0 {
		t.Errorf("embedding rows: %v", out)
	}
	logits := []float32{2, 0, -1, 1}
	loss := runLeaf(t, &nn.CrossEntropyLoss{}, tensors.FromFlatDataAndDimensions(logits, 2, 2), tensors.FromValue([]int32{0, 1}))
	l0 := -2 + math.Log(math.Exp(2)+1)
	l1 := -1 + math.Log(math.Exp(-1)+math.Exp(1))
	near(t, "cross entropy", loss, []float64{(l0 + l1) / 2}, 1e-6)
}
