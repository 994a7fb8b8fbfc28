package execute

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

func emptyModel(t *testing.T) *nn.Model {
	m, err := nn.NewModel(&nn.Container{Type: "Root"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// run builds x → f(x, args...) → output and runs it on x.
func run(t *testing.T, op ir.OpKind, target string, x *tensors.Tensor, args []any, kwargs map[string]any) ([]float32, error) {
	t.Helper()
	g := ir.New()
	in := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	n := g.MustAddNode(op, "", target, append([]any{in}, args...), kwargs)
	g.MustAddNode(ir.Output, "output", "output", []any{n}, nil)
	c, err := Compile(&ir.MaseGraph{Model: emptyModel(t), Graph: g}, Mode{})
	if err != nil {
		return nil, err
	}
	out, err := c.Run(map[string]*tensors.Tensor{"x": x})
	if err != nil {
		return nil, err
	}
	return tensors.MustCopyFlatData[float32](out[0]), nil
}

func TestOps(t *testing.T) {
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	one := 1
	for _, tc := range []struct {
		op     ir.OpKind
		target string
		args   []any
		kwargs map[string]any
		want   []float32
	}{
		{ir.CallMethod, "view", []any{3, -1}, nil, []float32{1, 2, 3, 4, 5, 6}},
		{ir.CallMethod, "permute", []any{1, 0}, nil, []float32{1, 4, 2, 5, 3, 6}},
		{ir.CallMethod, "transpose", []any{0, 1}, nil, []float32{1, 4, 2, 5, 3, 6}},
		{ir.CallFunction, "getitem", []any{[]any{ir.Slice{}, 0}}, nil, []float32{1, 4}},
		{ir.CallFunction, "getitem", []any{[]any{1, ir.Slice{Start: &one}}}, nil, []float32{5, 6}},
		{ir.CallFunction, "sub", []any{1.0}, nil, []float32{0, 1, 2, 3, 4, 5}},
		{ir.CallFunction, "mul", []any{2}, nil, []float32{2, 4, 6, 8, 10, 12}},
		{ir.CallFunction, "relu", nil, nil, []float32{1, 2, 3, 4, 5, 6}},
		{ir.CallFunction, "flatten", nil, map[string]any{"start_dim": 0}, []float32{1, 2, 3, 4, 5, 6}},
		{ir.CallFunction, "dropout", nil, map[string]any{"p": 0.5}, []float32{1, 2, 3, 4, 5, 6}}, // eval mode
	} {
		got, err := run(t, tc.op, tc.target, x, tc.args, tc.kwargs)
		if err != nil {
			t.Errorf("%s %v: %v", tc.target, tc.args, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s %v = %v, want %v", tc.target, tc.args, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s %v = %v, want %v", tc.target, tc.args, got, tc.want)
				break
			}
		}
	}
}

func TestOpErrors(t *testing.T) {
	x := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for _, tc := range []struct {
		op     ir.OpKind
		target string
		args   []any
		want   string
	}{
		{ir.CallFunction, "quux", nil, `no lowering for function "quux"`},
		{ir.CallMethod, "quux", nil, `no lowering for method "quux"`},
		{ir.CallMethod, "view", []any{4, -1}, "shape [4 -1] is invalid for input of size 6"},
		{ir.CallMethod, "permute", []any{0}, "1 axes for a tensor of rank 2"},
		{ir.CallModule, "fc", nil, `model has no module "fc"`},
	} {
		if _, err := run(t, tc.op, tc.target, x, tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.target, err, tc.want)
		}
	}
}

func TestDropoutTrainMode(t *testing.T) {
	const n = 20000
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	g := ir.New()
	in := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	d := g.MustAddNode(ir.CallFunction, "", "dropout", []any{in}, map[string]any{"p": 0.25})
	g.MustAddNode(ir.Output, "output", "output", []any{d}, nil)
	c, err := Compile(&ir.MaseGraph{Model: emptyModel(t), Graph: g}, Mode{Training: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Run(map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(ones, n)})
	if err != nil {
		t.Fatal(err)
	}
	zeros := 0
	for _, v := range tensors.MustCopyFlatData[float32](out[0]) {
		switch {
		case v == 0:
			zeros++
		case v < 1.3333 || v > 1.3334:
			t.Fatalf("kept value %v, want 1/(1-0.25)", v)
		}
	}
	if frac := float64(zeros) / n; frac < 0.23 || frac > 0.27 {
		t.Errorf("dropped fraction %.3f, want ≈ 0.25", frac)
	}
}
