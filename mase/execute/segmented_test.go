package execute_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/trace"
)

func init() {
	// test.double multiplies a float32 tensor by 2 on the host.
	if err := ops.Register(ops.Op{Kind: ir.CallFunction, Target: "test.double", Host: double}); err != nil {
		panic(err)
	}
}

func double(args []any, _ map[string]any) (any, error) {
	x, err := ops.TensorArg("test.double", args, 0)
	if err != nil {
		return nil, err
	}
	v, err := tensors.CopyFlatData[float32](x)
	if err != nil {
		return nil, err
	}
	for i := range v {
		v[i] *= 2
	}
	return tensors.FromFlatDataAndDimensions(v, x.Shape().Dimensions...), nil
}

// TestSegmentedRunsHostNodeBetweenSegments puts a host node between the
// MLP's flatten and fc1: compiled mode must split the graph there, and
// the result must be the original graph's on doubled inputs.
func TestSegmentedRunsHostNodeBetweenSegments(t *testing.T) {
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	broken, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	flatten, fc1 := broken.Node("flatten"), broken.Node("fc1")
	var host *ir.Node
	if err := broken.InsertingAfter(flatten, func() error {
		host, err = broken.AddNode(ir.CallFunction, "double", "test.double", []any{flatten}, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := fc1.ReplaceInputWith(flatten, host); err != nil {
		t.Fatal(err)
	}
	if !execute.HasGraphBreaks(broken) || execute.HasGraphBreaks(plain) {
		t.Fatal("HasGraphBreaks is wrong")
	}
	whole, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: broken}, execute.Mode{}) // lazy: the error comes at the first run
	if err != nil {
		t.Fatal(err)
	}
	in, err := models.DummyInput(m, []string{"x"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whole.Run(in); err == nil || !strings.Contains(err.Error(), "graph break") {
		t.Errorf("one computation with a host node: error %v, want one naming the graph break", err)
	}
	s, err := execute.NewSegmented(&ir.MaseGraph{Model: m, Graph: broken}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	if c, h := s.Segments(); c != 2 || h != 1 {
		t.Errorf("segments: %d compiled, %d host; want 2 and 1", c, h)
	}
	xs := tensors.MustCopyFlatData[float32](in["x"])
	for i := range xs {
		xs[i] *= 2
	}
	doubled := map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(xs, in["x"].Shape().Dimensions...)}
	c, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: plain}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Run(doubled)
	if err != nil {
		t.Fatal(err)
	}
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: broken}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]execute.Runner{"segmented": s, "eager": e} {
		for round := 0; round < 2; round++ {
			got, err := r.Run(in)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			w, g := tensors.MustCopyFlatData[float32](want[0]), tensors.MustCopyFlatData[float32](got[0])
			for i := range w {
				if math.Abs(float64(w[i]-g[i])) > 1e-5*(1+math.Abs(float64(w[i]))) {
					t.Fatalf("%s round %d [%d]: %v, want %v", name, round, i, g[i], w[i])
				}
			}
		}
	}
}

// TestSegmentedWithoutBreaksIsOneSegment checks the plain graph is one
// segment and agrees with Compiled on bert-tiny.
func TestSegmentedWithoutBreaksIsOneSegment(t *testing.T) {
	m, err := models.NewBertTiny(2)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := execute.NewSegmented(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	if c, h := s.Segments(); c != 1 || h != 0 {
		t.Errorf("segments: %d compiled, %d host; want 1 and 0", c, h)
	}
	ids := make([]int32, 2*8)
	for i := range ids {
		ids[i] = int32(500 + 37*i)
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 8)}
	c, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	w, gv := tensors.MustCopyFlatData[float32](want[0]), tensors.MustCopyFlatData[float32](got[0])
	for i := range w {
		if math.Abs(float64(w[i]-gv[i])) > 1e-6 {
			t.Fatalf("[%d]: %v, want %v", i, gv[i], w[i])
		}
	}
}
