package ops_test

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/trace"
)

// checkGraph runs CheckCall over every call node of g, with placeholders,
// get_attr nodes and modules' outputs as tensors.
func checkGraph(g *ir.Graph) error {
	kinds := map[*ir.Node]ops.Kind{}
	kindOf := func(n *ir.Node) ops.Kind { return kinds[n] }
	for _, n := range g.Nodes() {
		switch n.Op {
		case ir.Placeholder, ir.GetAttr:
			kinds[n] = ops.KindTensor
		case ir.Output:
		default:
			k, err := ops.CheckCall(n, kindOf)
			if err != nil {
				return err
			}
			kinds[n] = k
		}
	}
	return nil
}

// TestTracedGraphsPassCheckCall: every graph the models trace, and the
// graphs compiled mode's rewrites make (host kernels, buffer reads), has
// arguments its operators take.
func TestTracedGraphsPassCheckCall(t *testing.T) {
	for _, c := range []struct {
		model  string
		inputs []string
	}{{"mlp", nil}, {"bert-tiny", nil}, {"bert-tiny", []string{"input_ids", "attention_mask", "labels"}}, {"resnet18", nil}} {
		m, err := models.New(c.model, 1)
		if err != nil {
			t.Fatal(err)
		}
		mg, err := trace.NewMaseGraph(m, c.inputs)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkGraph(mg.Graph); err != nil {
			t.Errorf("%s %v: %v", c.model, c.inputs, err)
		}
	}
	leaky, err := models.NewMLPWith(1, models.MLPOptions{Activation: models.ActivationLeakyReLU})
	if err != nil {
		t.Fatal(err)
	}
	mg, err := trace.NewMaseGraph(leaky, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkGraph(mg.Graph); err != nil {
		t.Errorf("leaky MLP: %v", err)
	}

	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	if mg, err = trace.NewMaseGraph(m, []string{"input_ids", "attention_mask"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32}); err != nil {
		t.Fatal(err)
	}
	rep, err := compileopt.Optimize(mg, execute.Mode{}, compileopt.Names())
	if err != nil {
		t.Fatal(err)
	}
	hosts := 0
	for _, n := range mg.Graph.Nodes() {
		if strings.HasPrefix(n.Target, ops.HostPrefix) {
			hosts++
		}
	}
	if hosts < 3 {
		t.Fatalf("rewrites %s left %d host kernel nodes, want them all", rep, hosts)
	}
	if err := checkGraph(mg.Graph); err != nil {
		t.Errorf("rewritten bert-tiny: %v", err)
	}
}

// TestCheckCallRefuses: each argument the lowering could not take is
// refused in one line naming the operator, the argument and what is
// allowed.
func TestCheckCallRefuses(t *testing.T) {
	three := 3
	cases := []struct {
		name   string
		op     ir.OpKind
		target string
		args   func(x, size, dim *ir.Node) []any
		kwargs func(x, size, dim *ir.Node) map[string]any
		want   string
	}{
		{"unknown function", ir.CallFunction, "vlatten", func(x, _, _ *ir.Node) []any { return []any{x} }, nil,
			`no lowering for function "vlatten" (known: add,`},
		{"unknown method", ir.CallMethod, "siz", func(x, _, _ *ir.Node) []any { return []any{x} }, nil, `no lowering for method "siz"`},
		{"int where a tensor", ir.CallFunction, "relu", func(_, _, dim *ir.Node) []any { return []any{dim} }, nil,
			"call_function relu: argument 0 (input) is %dim (an int) (allowed: a tensor)"},
		{"tensor where an int", ir.CallMethod, "view", func(x, _, _ *ir.Node) []any { return []any{x, x, 4} }, nil,
			"call_method view: argument 1 (size) is %x (a tensor) (allowed: ints, or one tuple of ints)"},
		{"string where an int", ir.CallMethod, "unsqueeze", func(x, _, _ *ir.Node) []any { return []any{x, "1"} }, nil,
			`call_method unsqueeze: argument 1 (dim) is "1" (a string) (allowed: an int)`},
		{"float where an int", ir.CallMethod, "transpose", func(x, _, _ *ir.Node) []any { return []any{x, 1, 2.0} }, nil,
			"argument 2 (dim1) is 2.0 (a float) (allowed: an int)"},
		{"tuple of ints where an int", ir.CallFunction, "arange", func(_, size, _ *ir.Node) []any { return []any{size} }, nil,
			"argument 0 (end) is %size (a tuple of ints) (allowed: an int)"},
		{"too few", ir.CallFunction, "matmul", func(x, _, _ *ir.Node) []any { return []any{x} }, nil,
			"call_function matmul: 1 positional arguments, want at least 2 (input, other)"},
		{"too many", ir.CallFunction, "relu", func(x, _, _ *ir.Node) []any { return []any{x, x} }, nil,
			"call_function relu: 2 positional arguments, want at most 1 (input)"},
		{"unknown keyword", ir.CallFunction, "add", func(x, _, _ *ir.Node) []any { return []any{x, 1} },
			func(*ir.Node, *ir.Node, *ir.Node) map[string]any { return map[string]any{"alpha": 2} },
			`call_function add: unknown keyword "alpha" (allowed: none)`},
		{"keyword of the wrong type", ir.CallFunction, "flatten", func(x, _, _ *ir.Node) []any { return []any{x} },
			func(x, _, _ *ir.Node) map[string]any { return map[string]any{"start_dim": x} },
			"keyword start_dim is %x (a tensor) (allowed: an int)"},
		{"both ways", ir.CallMethod, "softmax", func(x, _, _ *ir.Node) []any { return []any{x, 1} },
			func(*ir.Node, *ir.Node, *ir.Node) map[string]any { return map[string]any{"dim": 1} },
			"call_method softmax: dim is given both positionally and by keyword"},
		{"dropout 5.0", ir.CallFunction, "dropout", func(x, _, _ *ir.Node) []any { return []any{x} },
			func(*ir.Node, *ir.Node, *ir.Node) map[string]any { return map[string]any{"p": 5.0} },
			"call_function dropout: p 5 is not a dropout probability (allowed: 0 ≤ p < 1)"},
		{"attention dropout 1", ir.CallFunction, "scaled_dot_product_attention", func(x, _, _ *ir.Node) []any { return []any{x, x, x} },
			func(*ir.Node, *ir.Node, *ir.Node) map[string]any { return map[string]any{"dropout_p": 1} },
			"dropout_p 1 is not a dropout probability"},
		{"attention mask a float", ir.CallFunction, "scaled_dot_product_attention", func(x, _, _ *ir.Node) []any { return []any{x, x, x} },
			func(*ir.Node, *ir.Node, *ir.Node) map[string]any { return map[string]any{"attn_mask": 0.5} },
			"keyword attn_mask is 0.5 (a float) (allowed: a tensor or None)"},
		{"index a string", ir.CallFunction, "getitem", func(x, _, _ *ir.Node) []any { return []any{x, "a"} }, nil,
			`argument 1 (index) is "a" (a string) (allowed: an int or a slice or a tuple of ints and slices)`},
		{"index an int", ir.CallFunction, "getitem", func(_, _, dim *ir.Node) []any { return []any{dim, 0} }, nil,
			"argument 0 (object) is %dim (an int) (allowed: a tensor or a tuple of ints)"},
		{"module given an int", ir.CallModule, "fc1", func(x, _, dim *ir.Node) []any { return []any{x, dim} }, nil,
			"call_module fc1: argument 1 is %dim (an int) (allowed: a tensor)"},
		{"module given nothing", ir.CallModule, "fc1", func(*ir.Node, *ir.Node, *ir.Node) []any { return nil }, nil,
			"call_module fc1 has no arguments (allowed: one or more tensors)"},
		{"host kernel numel a float", ir.CallFunction, ops.HostMXInt8, func(x, _, _ *ir.Node) []any { return []any{x, x, 1.5, three} }, nil,
			"argument 2 (numel) is 1.5 (a float) (allowed: an int)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := ir.New()
			x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
			size := g.MustAddNode(ir.CallMethod, "size", "size", []any{x}, nil)
			dim := g.MustAddNode(ir.CallFunction, "dim", "getitem", []any{size, 1}, nil)
			var kw map[string]any
			if c.kwargs != nil {
				kw = c.kwargs(x, size, dim)
			}
			g.MustAddNode(c.op, "n", c.target, c.args(x, size, dim), kw)
			err := checkGraph(g)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// TestCheckCallKinds: the kinds CheckCall infers for shape arithmetic,
// which decide whether later arguments are ints or tensors.
func TestCheckCallKinds(t *testing.T) {
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	size := g.MustAddNode(ir.CallMethod, "size", "size", []any{x}, nil)
	n := g.MustAddNode(ir.CallMethod, "size_1", "size", []any{x, 1}, nil)
	first := g.MustAddNode(ir.CallFunction, "getitem", "getitem", []any{size, 0}, nil)
	head := g.MustAddNode(ir.CallFunction, "getitem_1", "getitem", []any{size, ir.Slice{}}, nil)
	row := g.MustAddNode(ir.CallFunction, "getitem_2", "getitem", []any{x, []any{ir.Slice{}, 0}}, nil)
	prod := g.MustAddNode(ir.CallFunction, "mul", "mul", []any{first, n}, nil)
	half := g.MustAddNode(ir.CallFunction, "truediv", "truediv", []any{first, 2}, nil)
	shape := g.MustAddNode(ir.CallFunction, "add", "add", []any{head, []any{2, 3}}, nil)
	scaled := g.MustAddNode(ir.CallFunction, "mul_1", "mul", []any{x, half}, nil)
	want := map[*ir.Node]ops.Kind{size: ops.KindInts, n: ops.KindInt, first: ops.KindInt, head: ops.KindInts, row: ops.KindTensor,
		prod: ops.KindInt, half: ops.KindFloat, shape: ops.KindInts, scaled: ops.KindTensor}
	kinds := map[*ir.Node]ops.Kind{x: ops.KindTensor}
	for _, n := range g.Nodes()[1:] {
		k, err := ops.CheckCall(n, func(n *ir.Node) ops.Kind { return kinds[n] })
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		kinds[n] = k
		if k != want[n] {
			t.Errorf("%s: kind %d, want %d", n.Name, k, want[n])
		}
	}
}
