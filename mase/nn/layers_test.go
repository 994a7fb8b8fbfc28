package nn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
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
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
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
	// Rows labelled -100 (PyTorch's ignore_index) are left out of the mean.
	logits3 := []float32{2, 0, 5, -5, -1, 1}
	loss = runLeaf(t, &nn.CrossEntropyLoss{}, tensors.FromFlatDataAndDimensions(logits3, 3, 2), tensors.FromValue([]int32{0, nn.IgnoreIndex, 1}))
	near(t, "cross entropy with an ignored row", loss, []float64{(l0 + l1) / 2}, 1e-6)
	loss = runLeaf(t, &nn.CrossEntropyLoss{}, tensors.FromFlatDataAndDimensions(logits, 2, 2), tensors.FromValue([]int32{nn.IgnoreIndex, nn.IgnoreIndex}))
	near(t, "cross entropy, every row ignored", loss, []float64{0}, 0)
}

// fusedAndDecomposed runs fn on inputs with the fused ops (nn.CustomGradient's
// fast paths) and with GOMLX_FUSION=0 (GoMLX's decomposed ops and automatic
// gradients) and compares the outputs and the gradients of Σ out·r (r a
// fixed pseudo-random tensor) with respect to every float input.
// custom says whether the fused run must use a hand-written gradient.
func fusedAndDecomposed(t *testing.T, what string, custom bool, fn func(ins []*graph.Node) *graph.Node, inputs ...*tensors.Tensor) {
	t.Helper()
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	run := func(fusion string) [][]float32 {
		t.Setenv("GOMLX_FUSION", fusion)
		exec, err := graph.NewExec(be, func(ins []*graph.Node) []*graph.Node {
			out := fn(ins)
			r := make([]float32, out.Shape().Size())
			for i := range r {
				r[i] = float32(math.Sin(float64(i)*1.7 + 0.3))
			}
			loss := graph.ReduceAllSum(graph.Mul(out, graph.Const(out.Graph(), tensors.FromFlatDataAndDimensions(r, out.Shape().Dimensions...))))
			var wrt []*graph.Node
			for _, in := range ins {
				if in.DType().IsFloat() {
					wrt = append(wrt, in)
				}
			}
			hasCustom := false
			for _, n := range out.Graph().Nodes() {
				hasCustom = hasCustom || n.CustomGradient() != nil
			}
			if want := custom && fusion == "1"; hasCustom != want {
				t.Errorf("%s (GOMLX_FUSION=%s): custom gradients %v, want %v", what, fusion, hasCustom, want)
			}
			return append([]*graph.Node{out}, graph.Gradient(loss, wrt...)...)
		})
		if err != nil {
			t.Fatal(err)
		}
		args := make([]any, len(inputs))
		for i, in := range inputs {
			args[i] = in
		}
		outs, err := exec.Exec(args...)
		if err != nil {
			t.Fatal(err)
		}
		res := make([][]float32, len(outs))
		for i, o := range outs {
			res[i] = tensors.MustCopyFlatData[float32](o)
		}
		return res
	}
	fused, ref := run("1"), run("0")
	for i := range ref {
		scale := 0.0
		for _, v := range ref[i] {
			scale = max(scale, math.Abs(float64(v)))
		}
		for j := range ref[i] {
			if d := math.Abs(float64(fused[i][j] - ref[i][j])); !(d <= 2e-6*max(scale, 1)) {
				t.Errorf("%s: output %d (0 is the value, then gradients) [%d] = %v fused, %v decomposed", what, i, j, fused[i][j], ref[i][j])
				break
			}
		}
	}
}

func randTensor(seed float64, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)*0.37+seed) * 2)
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

func TestFusedLayersMatchDecomposed(t *testing.T) {
	x3, x2 := randTensor(1, 3, 5, 8), randTensor(2, 7, 8)
	w, wWide, b, bWide := randTensor(3, 6, 8), randTensor(4, 16, 8), randTensor(5, 6), randTensor(6, 16)
	for _, tc := range []struct {
		name   string
		custom bool
		fn     func(ins []*graph.Node) *graph.Node
		ins    []*tensors.Tensor
	}{
		{"linear rank 3", true, func(in []*graph.Node) *graph.Node { return nn.LinearBiasOp(in[0], in[1], in[2]) }, []*tensors.Tensor{x3, w, b}},
		{"linear rank 2 wide", true, func(in []*graph.Node) *graph.Node { return nn.LinearBiasOp(in[0], in[1], in[2]) }, []*tensors.Tensor{x2, wWide, bWide}},
		{"linear narrow (in > out)", true, func(in []*graph.Node) *graph.Node {
			return nn.LinearBiasOp(in[0], graph.Slice(in[1], graph.AxisRange(0, 4)), graph.Slice(in[2], graph.AxisRange(0, 4)))
		}, []*tensors.Tensor{x3, w, b}},
		{"linear no bias", true, func(in []*graph.Node) *graph.Node { return nn.LinearOp(in[0], in[1]) }, []*tensors.Tensor{x3, w}},
		{"layer norm", true, func(in []*graph.Node) *graph.Node {
			w, b := graph.Reshape(graph.Slice(in[1], graph.AxisRange(0, 1)), 8), graph.Reshape(graph.Slice(in[1], graph.AxisRange(1, 2)), 8)
			return nn.LayerNormOp(in[0], w, b, 1e-5)
		}, []*tensors.Tensor{x3, randTensor(7, 2, 8)}},
		{"gelu (with zeros)", true, func(in []*graph.Node) *graph.Node {
			return nn.GELUOp(graph.Mul(in[0], graph.Const(in[0].Graph(), float32(1))))
		},
			[]*tensors.Tensor{tensors.FromFlatDataAndDimensions([]float32{-6, -3, -1, -0.1, 0, 0, 1e-8, 0.2, 1, 2.5, 7, 0}, 3, 4)}},
		{"gelu", true, func(in []*graph.Node) *graph.Node { return nn.GELUOp(in[0]) }, []*tensors.Tensor{x3}},
		{"softmax", true, func(in []*graph.Node) *graph.Node { return nn.SoftmaxOp(in[0], -1) }, []*tensors.Tensor{x3}},
		{"softmax axis 1", false, func(in []*graph.Node) *graph.Node { return nn.SoftmaxOp(in[0], 1) }, []*tensors.Tensor{x3}},
	} {
		fusedAndDecomposed(t, tc.name, tc.custom, tc.fn, tc.ins...)
	}
}

// TestAttentionFusedMatchesDecomposed runs scaled_dot_product_attention
// through the interpreter (compiled and capture modes, eval and train with
// dropout) with the fused ops and with GOMLX_FUSION=0.
func TestAttentionFusedMatchesDecomposed(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	const b, h, s, d = 2, 3, 5, 4
	maskVals := make([]float32, b*s)
	for i := range maskVals {
		if i%s >= s-1-i/s { // padding at the end, longer in the second row
			maskVals[i] = -math.MaxFloat32
		}
	}
	feed := map[string]*tensors.Tensor{"q": randTensor(1, b, h, s, d), "k": randTensor(2, b, h, s, d), "v": randTensor(3, b, h, s, d),
		"mask": tensors.FromFlatDataAndDimensions(maskVals, b, 1, 1, s)}
	g := ir.New()
	var args []any
	for _, name := range []string{"q", "k", "v", "mask"} {
		args = append(args, g.MustAddNode(ir.Placeholder, name, name, nil, nil))
	}
	att := g.MustAddNode(ir.CallFunction, "", "scaled_dot_product_attention", args[:3],
		map[string]any{"attn_mask": args[3], "dropout_p": 0.3, "is_causal": false})
	g.MustAddNode(ir.Output, "output", "output", []any{att}, nil)
	m, err := nn.NewModel(&nn.Container{Type: "Root"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(fusion string, training, capture bool) []float32 {
		t.Setenv("GOMLX_FUSION", fusion)
		if err := m.Store.SetRNGStateFromSeed(11); err != nil {
			t.Fatal(err)
		}
		c, err := execute.CompileOn(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: training}, capture)
		if err != nil {
			t.Fatal(err)
		}
		if capture {
			vals, err := c.RunCapture(feed)
			if err != nil {
				t.Fatal(err)
			}
			return tensors.MustCopyFlatData[float32](vals[att].(*tensors.Tensor))
		}
		out, err := c.Run(feed)
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](out[0])
	}
	for _, training := range []bool{false, true} {
		for _, capture := range []bool{false, true} {
			fused, ref := run("1", training, capture), run("0", training, capture)
			for i := range ref {
				if math.Abs(float64(fused[i]-ref[i])) > 1e-5 {
					t.Fatalf("training=%v capture=%v: output[%d] = %v fused, %v decomposed", training, capture, i, fused[i], ref[i])
				}
			}
		}
	}
	if eval, train := run("1", false, false), run("1", true, false); slices.Equal(eval, train) {
		t.Error("dropout_p in train mode changed nothing")
	}
}
