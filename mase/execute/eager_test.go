package execute_test

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// compareModes runs the model's graph (traced with inputNames) in both
// modes on in and checks every output agrees to tol (relative to the
// output's largest magnitude).
func compareModes(t *testing.T, m *nn.Model, inputNames []string, in map[string]*tensors.Tensor, tol float64) {
	t.Helper()
	g, err := trace.Trace(m, inputNames)
	if err != nil {
		t.Fatal(err)
	}
	c, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ { // the second round uses the cached executables
		got, err := e.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("eager gave %d outputs, compiled %d", len(got), len(want))
		}
		for i := range want {
			w, g := tensors.MustCopyFlatData[float32](want[i]), tensors.MustCopyFlatData[float32](got[i])
			if len(w) != len(g) {
				t.Fatalf("output %d: %d values, want %d", i, len(g), len(w))
			}
			scale := 1e-6
			for _, v := range w {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for j := range w {
				if d := math.Abs(float64(w[j]-g[j])) / scale; d > tol {
					t.Fatalf("round %d output %d[%d]: eager %v, compiled %v", round, i, j, g[j], w[j])
				}
			}
		}
	}
}

func TestEagerEqualsCompiledBert(t *testing.T) {
	m, err := models.NewBertTiny(3)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"input_ids", "attention_mask", "labels"}
	ids := make([]int32, 2*16)
	mask := make([]int32, 2*16)
	for i := range ids {
		ids[i] = int32(100 + (i*7919)%20000)
		mask[i] = 1
	}
	for i := 12; i < 16; i++ {
		mask[16+i] = 0
	}
	in := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 16),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, 2, 16), "labels": tensors.FromFlatDataAndDimensions([]int32{1, 0}, 2)}
	compareModes(t, m, names, in, 1e-5)
}

func TestEagerEqualsCompiledMLP(t *testing.T) {
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	in, err := models.DummyInput(m, []string{"x"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	compareModes(t, m, nil, in, 1e-6)
}

func TestEagerInputErrors(t *testing.T) {
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(map[string]*tensors.Tensor{}); err == nil {
		t.Error("no error for a missing input")
	}
	if _, err := e.Run(map[string]*tensors.Tensor{"x": tensors.FromScalar(float32(1)), "y": tensors.FromScalar(float32(1))}); err == nil {
		t.Error("no error for an unexpected input")
	}
}
