package ops_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

// f32 is a float32 tensor operand.
func f32(name string, shape ...int) ops.Operand {
	return ops.Operand{Name: name, Shape: shape, DType: "float32"}
}

// costOf runs the cost function of an entry on tensor inputs (positional
// arguments, in order), keyword tensors, parameters and one output.
func costOf(t *testing.T, kind ir.OpKind, target string, mod nn.Module, args []ops.Operand, kwargs map[string]any, params []ops.Operand, out ops.Operand) ops.Cost {
	t.Helper()
	e, ok := ops.Lookup(kind, target)
	if !ok || e.Cost == nil {
		t.Fatalf("%s %s: entry %+v, %v: want a cost function", kind, target, e, ok)
	}
	in := ops.CostInput{Module: mod, Params: params, Outputs: []ops.Operand{out}, Kwargs: map[string]any{}}
	for i := range args {
		in.Args = append(in.Args, &args[i])
		in.Inputs = append(in.Inputs, args[i])
	}
	for _, k := range slices.Sorted(maps.Keys(kwargs)) {
		in.Kwargs[k] = kwargs[k]
		if o, ok := kwargs[k].(*ops.Operand); ok {
			in.Inputs = append(in.Inputs, *o)
		}
	}
	c, err := e.Cost(in)
	if err != nil {
		t.Fatalf("%s %s: %v", kind, target, err)
	}
	return c
}

func checkCost(t *testing.T, what string, got, want ops.Cost) {
	t.Helper()
	if got != want {
		t.Errorf("%s: cost %+v, want %+v", what, got, want)
	}
}

func TestCostLinear(t *testing.T) {
	// bert-tiny's intermediate dense at batch 8 × seq 128: [8,128,128] → [8,128,512].
	const b, s, in, out = 8, 128, 128, 512
	x, w, bias, y := f32("data_in_0", b, s, in), f32("weight", out, in), f32("bias", 1, out), f32("data_out_0", b, s, out)
	got := costOf(t, ir.CallModule, "Linear", nn.NewLinear(in, out, true), []ops.Operand{x}, nil, []ops.Operand{w, bias}, y)
	checkCost(t, "Linear(128, 512)", got, ops.Cost{
		FLOPs:            2 * b * s * out * in, // one multiply-add per (row, out, in)
		ElementwiseFLOPs: b * s * out,          // the bias add
		BytesRead:        4 * (b*s*in + out*in + out),
		BytesWritten:     4 * b * s * out,
	})
	// Without a bias: no element-wise work; F.linear counts the same.
	got = costOf(t, ir.CallModule, "Linear", nn.NewLinear(in, out, false), []ops.Operand{x}, nil, []ops.Operand{w}, y)
	checkCost(t, "Linear without bias", got, ops.Cost{FLOPs: 2 * b * s * out * in, BytesRead: 4 * (b*s*in + out*in), BytesWritten: 4 * b * s * out})
	got = costOf(t, ir.CallFunction, "linear", nil, []ops.Operand{x, w, f32("bias", out)}, nil, nil, y)
	checkCost(t, "F.linear", got, ops.Cost{FLOPs: 2 * b * s * out * in, ElementwiseFLOPs: b * s * out,
		BytesRead: 4 * (b*s*in + out*in + out), BytesWritten: 4 * b * s * out})
}

func TestCostMatmulBatchDims(t *testing.T) {
	// [2,3,4,5] @ [3,5,6] broadcasts to [2,3,4,6]: 2·3 matmuls of 4×5 by 5×6.
	a, b, y := f32("a", 2, 3, 4, 5), f32("b", 3, 5, 6), f32("y", 2, 3, 4, 6)
	got := costOf(t, ir.CallFunction, "matmul", nil, []ops.Operand{a, b}, nil, nil, y)
	checkCost(t, "matmul", got, ops.Cost{FLOPs: 2 * (2 * 3) * 4 * 6 * 5, BytesRead: 4 * (2*3*4*5 + 3*5*6), BytesWritten: 4 * 2 * 3 * 4 * 6})
}

func TestCostConv2dStridePaddingGroups(t *testing.T) {
	// Conv2d(8, 16, 3, stride 2, padding 1, groups 4) on [2,8,15,15]:
	// Ho = ⌊(15 + 2·1 − 1·(3−1) − 1)/2⌋ + 1 = 8; weight [16, 8/4, 3, 3].
	conv := &nn.Conv2d{InChannels: 8, OutChannels: 16, KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2},
		Padding: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 4, Bias: true}
	x, w, bias, y := f32("data_in_0", 2, 8, 15, 15), f32("weight", 16, 2, 3, 3), f32("bias", 1, 16), f32("data_out_0", 2, 16, 8, 8)
	outElems := int64(2 * 16 * 8 * 8)
	got := costOf(t, ir.CallModule, "Conv2d", conv, []ops.Operand{x}, nil, []ops.Operand{w, bias}, y)
	checkCost(t, "Conv2d", got, ops.Cost{
		FLOPs:            2 * outElems * (8 / 4) * 3 * 3, // 73 728
		ElementwiseFLOPs: outElems,
		BytesRead:        4 * (2*8*15*15 + 16*2*3*3 + 16),
		BytesWritten:     4 * outElems,
	})
	if got.FLOPs != 73728 {
		t.Errorf("Conv2d FLOPs %d, want 73728", got.FLOPs)
	}
	// Without the weight in the metadata the module's configuration gives the same.
	got = costOf(t, ir.CallModule, "Conv2d", conv, []ops.Operand{x}, nil, nil, y)
	if got.FLOPs != 73728 {
		t.Errorf("Conv2d FLOPs from its configuration %d, want 73728", got.FLOPs)
	}
}

func TestCostAttention(t *testing.T) {
	const b, h, s, d = 8, 2, 128, 64
	q, k, v, y := f32("q", b, h, s, d), f32("k", b, h, s, d), f32("v", b, h, s, d), f32("out", b, h, s, d)
	scores := int64(b * h * s * s)
	qkv := int64(3 * 4 * b * h * s * d)
	for _, target := range []string{"scaled_dot_product_attention", ops.HostSDPA} {
		got := costOf(t, ir.CallFunction, target, nil, []ops.Operand{q, k, v}, map[string]any{"dropout_p": 0.1}, nil, y)
		checkCost(t, target+" without a mask", got, ops.Cost{
			FLOPs:            2 * 2 * b * h * s * s * d, // q·kᵀ and p·v
			ElementwiseFLOPs: (1 + ops.SoftmaxPerElement) * scores,
			BytesRead:        qkv,
			BytesWritten:     4 * b * h * s * d,
		})
		mask := f32("attn_mask", b, 1, 1, s)
		got = costOf(t, ir.CallFunction, target, nil, []ops.Operand{q, k, v}, map[string]any{"attn_mask": &mask}, nil, y)
		checkCost(t, target+" with a mask", got, ops.Cost{
			FLOPs:            2 * 2 * b * h * s * s * d, // a mask adds no matmul work
			ElementwiseFLOPs: (2 + ops.SoftmaxPerElement) * scores,
			BytesRead:        qkv + 4*b*s,
			BytesWritten:     4 * b * h * s * d,
		})
	}
	// Cross-attention with another value width: 2·BH·Sq·Sk·(D + Dv).
	q, k, v, y = f32("q", 1, 4, 10, 16), f32("k", 1, 4, 20, 16), f32("v", 1, 4, 20, 32), f32("out", 1, 4, 10, 32)
	got := costOf(t, ir.CallFunction, "scaled_dot_product_attention", nil, []ops.Operand{q, k, v}, nil, nil, y)
	if want := int64(2*4*10*20*16 + 2*4*10*20*32); got.FLOPs != want {
		t.Errorf("cross-attention FLOPs %d, want %d", got.FLOPs, want)
	}
}

func TestCostEmbedding(t *testing.T) {
	// bert-tiny's word embeddings at batch 8 × seq 128.
	ids := ops.Operand{Name: "data_in_0", Shape: []int{8, 128}, DType: "int32"}
	w, y := f32("weight", 30522, 128), f32("data_out_0", 8, 128, 128)
	got := costOf(t, ir.CallModule, "Embedding", nn.NewEmbedding(30522, 128), []ops.Operand{ids}, nil, []ops.Operand{w}, y)
	checkCost(t, "Embedding", got, ops.Cost{
		BytesRead:    4*8*128 + 4*8*128*128, // the indices and the 1024 rows gathered, not the table
		BytesWritten: 4 * 8 * 128 * 128,
	})
}

// graphWith builds x → node(target) with metadata, for NodeCostOf.
func graphWith(t *testing.T, kind ir.OpKind, target string, args []any, kwargs map[string]any, in, out []int, inDType, outDType string) (*ir.MaseGraph, *ir.Node) {
	t.Helper()
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	x.Meta = ir.NewMeta()
	x.Meta.Common.Results.Set("data_out_0", &ir.ArgInfo{Type: "float", Shape: in, DType: inDType})
	n := g.MustAddNode(kind, "", target, append([]any{x}, args...), kwargs)
	n.Meta = ir.NewMeta()
	n.Meta.Common.Args.Set("data_in_0", &ir.ArgInfo{Type: "float", Shape: in, DType: inDType})
	n.Meta.Common.Results.Set("data_out_0", &ir.ArgInfo{Type: "float", Shape: out, DType: outDType})
	return &ir.MaseGraph{Graph: g}, n
}

func TestCostViewsAndNoOps(t *testing.T) {
	mg, n := graphWith(t, ir.CallMethod, "view", []any{8, -1}, nil, []int{8, 128, 128}, []int{8, 16384}, "float32", "float32")
	c, err := ops.NodeCostOf(mg, n, false)
	if err != nil || c != (ops.NodeCost{Class: ops.ClassView}) {
		t.Errorf("view: %+v, %v; want 0 FLOPs, 0 bytes, class view", c, err)
	}
	mg, n = graphWith(t, ir.CallFunction, "dropout", nil, map[string]any{"p": 0.1}, []int{4, 8}, []int{4, 8}, "float32", "float32")
	if c, err = ops.NodeCostOf(mg, n, false); err != nil || c != (ops.NodeCost{Class: ops.ClassNoOp}) {
		t.Errorf("dropout in eval mode: %+v, %v; want a no-op", c, err)
	}
	if c, err = ops.NodeCostOf(mg, n, true); err != nil || c.Class != ops.ClassCompute || c.ElementwiseFLOPs != 32 || c.Bytes() != 2*4*32 {
		t.Errorf("dropout in train mode: %+v, %v; want 32 element-wise FLOPs and 256 bytes", c, err)
	}
	mg, n = graphWith(t, ir.CallMethod, "to", []any{"float32"}, nil, []int{4, 8}, []int{4, 8}, "float32", "float32")
	if c, err = ops.NodeCostOf(mg, n, false); err != nil || c != (ops.NodeCost{Class: ops.ClassNoOp}) {
		t.Errorf("to() its own dtype: %+v, %v; want a no-op", c, err)
	}
	mg, n = graphWith(t, ir.CallMethod, "to", []any{"float32"}, nil, []int{4, 8}, []int{4, 8}, "int32", "float32")
	if c, err = ops.NodeCostOf(mg, n, false); err != nil || c.Cost != (ops.Cost{BytesRead: 128, BytesWritten: 128}) {
		t.Errorf("to() another dtype: %+v, %v; want 128 bytes each way", c, err)
	}
	mg, n = graphWith(t, ir.CallFunction, "add", []any{1.0}, nil, []int{4, 8}, []int{4, 8}, "float32", "float32")
	if c, err = ops.NodeCostOf(mg, n, false); err != nil || c.Cost != (ops.Cost{ElementwiseFLOPs: 32, BytesRead: 128, BytesWritten: 128}) {
		t.Errorf("add of a scalar: %+v, %v", c, err)
	}
}

// TestCostTable: every built-in entry has a cost function; the views are
// exactly those eager mode has always folded; dropout is a no-op in eval
// mode and Identity always.
func TestCostTable(t *testing.T) {
	classes := ops.CostClasses()
	var views []string
	for _, kind := range []ir.OpKind{ir.CallFunction, ir.CallMethod, ir.CallModule} {
		for _, target := range ops.Names(kind, false) {
			e, _ := ops.Lookup(kind, target)
			if e.Cost == nil && !strings.HasPrefix(target, "test.") {
				t.Errorf("%s %s has no cost function", kind, target)
			}
			if classes[kind][target] == ops.ClassView && kind != ir.CallModule {
				views = append(views, string(kind)+" "+target)
			}
		}
	}
	slices.Sort(views)
	want := []string{"call_function flatten", "call_function getitem", "call_function transpose", "call_function unsqueeze",
		"call_method contiguous", "call_method flatten", "call_method permute", "call_method reshape", "call_method size",
		"call_method transpose", "call_method unsqueeze", "call_method view"}
	if !slices.Equal(views, want) {
		t.Errorf("views %v, want %v", views, want)
	}
	for _, c := range []struct {
		kind   ir.OpKind
		target string
		want   ops.Class
	}{{ir.CallModule, "Dropout", ops.ClassEvalNoOp}, {ir.CallFunction, "dropout", ops.ClassEvalNoOp},
		{ir.CallModule, "Identity", ops.ClassNoOp}, {ir.CallModule, "Flatten", ops.ClassView},
		{ir.CallModule, "Linear", ops.ClassCompute}, {ir.CallFunction, "matmul", ops.ClassCompute}} {
		if got := classes[c.kind][c.target]; got != c.want {
			t.Errorf("%s %s: class %s, want %s", c.kind, c.target, got, c.want)
		}
	}
	if ops.ClassEvalNoOp.In(false) != ops.ClassNoOp || ops.ClassEvalNoOp.In(true) != ops.ClassCompute || ops.ClassView.In(true) != ops.ClassView {
		t.Error("Class.In does not resolve eval_no_op by mode")
	}
}
