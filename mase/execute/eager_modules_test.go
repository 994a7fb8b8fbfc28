package execute

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/prune"
)

// chainGraph builds x → mods[0] → relu → mods[1] → relu → … and returns
// every module's output.
func chainGraph(t *testing.T, mods ...string) *ir.Graph {
	t.Helper()
	g := ir.New()
	add := func(op ir.OpKind, name, target string, args []any) *ir.Node {
		n, err := g.AddNode(op, name, target, args, nil)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := add(ir.Placeholder, "x", "x", nil)
	var outs []any
	for i, mod := range mods {
		if i > 0 {
			x = add(ir.CallFunction, "relu_"+mod, "relu", []any{x})
		}
		x = add(ir.CallModule, mod, mod, []any{x})
		outs = append(outs, x)
	}
	add(ir.Output, "output", "output", []any{outs})
	return g
}

// runAll runs r twice (building, then cached) and returns the second
// run's outputs as float32 values.
func runAll(t *testing.T, r Runner, in map[string]*tensors.Tensor) [][]float32 {
	t.Helper()
	var vals [][]float32
	for round := 0; round < 2; round++ {
		outs, err := r.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		vals = vals[:0]
		for _, o := range outs {
			vals = append(vals, tensors.MustCopyFlatData[float32](o))
		}
		Finalize(outs...)
	}
	return vals
}

func closeValues(t *testing.T, what string, got, want [][]float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: output %d has %d values, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if d := math.Abs(float64(got[i][j] - want[i][j])); d > tol*(1+math.Abs(float64(want[i][j]))) {
				t.Fatalf("%s: output %d[%d] = %v, want %v", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestEagerModulesShareExecutables runs three Linear modules of one
// configuration and different weights, the third masked by a
// parametrization: the first two share one executable, each with its own
// weights (an executable bound to the wrong module's weights fails the
// comparison with compiled mode); the parametrized one keeps its own.
func TestEagerModulesShareExecutables(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: []nn.Named{
		{Name: "a", Module: nn.NewLinear(4, 4, true)},
		{Name: "b", Module: nn.NewLinear(4, 4, true)},
		{Name: "c", Module: nn.NewLinear(4, 4, true)},
	}}, 7)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]float32, 16)
	for i := range mask {
		mask[i] = float32(i % 2)
	}
	if _, err := m.RegisterBuffer("c.weight_mask", tensors.FromFlatDataAndDimensions(mask, 4, 4)); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterParametrization("c", "weight", &prune.Mask{Buffer: "c.weight_mask"}); err != nil {
		t.Fatal(err)
	}
	mg := &ir.MaseGraph{Model: m, Graph: chainGraph(t, "a", "b", "c")}
	xs := make([]float32, 12)
	for i := range xs {
		xs[i] = float32(i)/5 - 1
	}
	in := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(xs, 3, 4)}
	c, err := CompileOn(be, mg, Mode{}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := runAll(t, c, in)

	for _, share := range []bool{true, false} {
		e, err := NewEagerOn(be, mg, Mode{})
		if err != nil {
			t.Fatal(err)
		}
		e.shareModules = share
		got := runAll(t, e, in)
		closeValues(t, "eager", got, want, 1e-5)
		// Stages: a, relu, b, relu, c. Shared: a and b one executable,
		// the relus one, c its own (3); without sharing, 4.
		wantExecs := 4
		if share {
			wantExecs = 3
		}
		if n := e.Stats().Executables; n != wantExecs {
			t.Errorf("share %v: %d executables, want %d", share, n, wantExecs)
		}
		for _, st := range e.stages {
			if n := st.nodes[0]; n.Op == ir.CallModule {
				if shared := st.modShared != ""; shared != (share && n.Target != "c") {
					t.Errorf("share %v: module %s shared %v", share, n.Target, shared)
				}
			}
		}
		e.Close()
	}
	// The parameters passed as inputs are the store's: still there.
	for _, p := range m.Parameters() {
		if v, err := p.Variable.Value(); err != nil || !v.Ok() {
			t.Errorf("parameter %s after the runs: %v", p.Name, err)
		}
	}
}

// TestEagerModulesShareTrainMode checks sharing changes nothing in train
// mode: bert-tiny's dropouts draw from the store's random state, which
// every executable updates in turn, so a forward with sharing equals one
// without, value for value, from the same random state.
func TestEagerModulesShareTrainMode(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, g := TracedBertTiny(t, "input_ids")
	ids := make([]int32, 2*16)
	for i := range ids {
		ids[i] = int32(1000 + i*37)
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 16)}
	var runs [2][][]float32
	var execs [2]int
	for i, share := range []bool{false, true} {
		e, err := NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: g}, Mode{Training: true})
		if err != nil {
			t.Fatal(err)
		}
		e.shareModules = share
		if err := m.Store.SetRNGStateFromSeed(42); err != nil {
			t.Fatal(err)
		}
		runs[i] = runAll(t, e, in)
		execs[i] = e.Stats().Executables
		e.Close()
	}
	closeValues(t, "train mode with sharing", runs[1], runs[0], 0)
	if execs[1] >= execs[0] {
		t.Errorf("train mode: %d executables with sharing, %d without", execs[1], execs[0])
	}
}

// TestEagerBatchNormTrainNotShared checks BatchNorm2d in train mode, which
// writes its running statistics back to the store, keeps one executable
// per module (and updates its own statistics), while in eval mode its
// statistics are inputs like parameters and it shares.
func TestEagerBatchNormTrainNotShared(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	newModel := func() *nn.Model {
		m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: []nn.Named{
			{Name: "bn1", Module: nn.NewBatchNorm2d(2)},
			{Name: "bn2", Module: nn.NewBatchNorm2d(2)},
		}}, 3)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	xs := make([]float32, 2*2*3*3)
	for i := range xs {
		xs[i] = float32(i%7) - 2
	}
	in := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(xs, 2, 2, 3, 3)}
	for _, training := range []bool{true, false} {
		var outs [2][][]float32
		var stats [2][]float32
		for i, share := range []bool{false, true} {
			m := newModel()
			e, err := NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: chainGraph(t, "bn1", "bn2")}, Mode{Training: training})
			if err != nil {
				t.Fatal(err)
			}
			e.shareModules = share
			outs[i] = runAll(t, e, in)
			for _, st := range e.stages {
				if st.nodes[0].Op == ir.CallModule && (st.modShared != "") != (share && !training) {
					t.Errorf("training %v, share %v: %s shared %v", training, share, st.nodes[0].Target, st.modShared != "")
				}
			}
			e.Close()
			for _, b := range []string{"bn1.running_mean", "bn2.running_var"} {
				v, ok := m.Buffer(b)
				if !ok {
					t.Fatalf("no buffer %s", b)
				}
				stats[i] = append(stats[i], tensors.MustCopyFlatData[float32](v.MustValue())...)
			}
		}
		closeValues(t, "outputs", outs[1], outs[0], 0)
		closeValues(t, "running statistics", [][]float32{stats[1]}, [][]float32{stats[0]}, 0)
	}
}

// counter is a leaf that counts its calls in a buffer in any mode (no
// module of nn does in eval mode): its shared build fails, and the stage
// falls back to its own executable, the buffer the store's.
type counter struct{}

func (*counter) TypeName() string       { return "Counter" }
func (*counter) ExtraRepr() string      { return "" }
func (*counter) Children() []nn.Named   { return nil }
func (*counter) Params() []nn.ParamSpec { return nil }
func (*counter) BufferSpecs() []nn.ParamSpec {
	return []nn.ParamSpec{{Name: "n", Shape: []int{1}, Init: nn.Zeros}}
}

func (*counter) Forward(c *nn.Call, args []any, _ map[string]any) (any, error) {
	n, err := c.Buffer("n")
	if err != nil {
		return nil, err
	}
	if err := c.SetBuffer("n", graph.OnePlus(n)); err != nil {
		return nil, err
	}
	return graph.Add(args[0].(*graph.Node), n), nil
}

func TestEagerSharedBuildFallsBack(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := nn.NewModel(&nn.Container{Type: "Net", Kids: []nn.Named{
		{Name: "c1", Module: &counter{}}, {Name: "c2", Module: &counter{}},
	}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEagerOn(be, &ir.MaseGraph{Model: m, Graph: chainGraph(t, "c1", "c2")}, Mode{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2)}
	got := runAll(t, e, in) // second run: the counters read 1
	closeValues(t, "counters", got, [][]float32{{2, 3}, {3, 4}}, 0)
	for _, b := range []string{"c1.n", "c2.n"} {
		v, _ := m.Buffer(b)
		if n := tensors.MustCopyFlatData[float32](v.MustValue()); n[0] != 2 {
			t.Errorf("%s = %v after 2 runs, want 2", b, n)
		}
	}
	for _, st := range e.stages {
		if st.nodes[0].Op == ir.CallModule && st.modShared != "" {
			t.Errorf("%s still shares", st.nodes[0].Target)
		}
	}
	if n := e.Stats().Executables; n != 3 {
		t.Errorf("%d executables, want 3 (c1, relu, c2)", n)
	}
}
