package execute_test

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
)

// F.leaky_relu (default, positional and keyword slope) and the tensor
// method, against a float64 reference.
func TestLeakyReLULowering(t *testing.T) {
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	a := g.MustAddNode(ir.CallFunction, "", "leaky_relu", []any{x}, nil)
	b := g.MustAddNode(ir.CallFunction, "", "leaky_relu", []any{x, 0.2}, nil)
	c := g.MustAddNode(ir.CallFunction, "", "leaky_relu", []any{x}, map[string]any{"negative_slope": 0.5, "inplace": false})
	d := g.MustAddNode(ir.CallMethod, "", "leaky_relu", []any{x, 3}, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{[]any{a, b, c, d}}, nil)
	e, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	in := []float32{-2, -0.5, 0, 0.25, 3, -1e-3}
	out, err := e.Run(map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(in, 2, 3)})
	if err != nil {
		t.Fatal(err)
	}
	for k, slope := range []float64{0.01, 0.2, 0.5, 3} {
		got := tensors.MustCopyFlatData[float32](out[k])
		for i, v := range in {
			want := float64(v)
			if want < 0 {
				want *= slope
			}
			if math.Abs(float64(got[i])-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("slope %v: leaky_relu(%v) = %v, want %v", slope, v, got[i], want)
			}
		}
	}
}
