package compileopt_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/trace"
)

// bertInputs is a batch of two sequences of 16 tokens, the second padded
// after 11 tokens.
func bertInputs() map[string]*tensors.Tensor {
	ids := make([]int32, 2*16)
	mask := make([]int32, 2*16)
	for i := range ids {
		ids[i] = int32(200 + (i*7919)%25000)
		mask[i] = 1
	}
	for i := 11; i < 16; i++ {
		mask[16+i] = 0
	}
	return map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 16),
		"attention_mask": tensors.FromFlatDataAndDimensions(mask, 2, 16)}
}

// run runs r on in and returns the first output's values.
func run(t *testing.T, r execute.Runner, in map[string]*tensors.Tensor) []float32 {
	t.Helper()
	out, err := r.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0])
}

// closeTo checks got against want to tol relative to want's largest
// magnitude.
func closeTo(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1e-6
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]-want[i])) / scale; d > tol {
			t.Fatalf("%s [%d]: %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestAllRewritesOnBertMatchEager(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewBertTiny(5)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"input_ids", "attention_mask"}
	plain, err := trace.Trace(m, names)
	if err != nil {
		t.Fatal(err)
	}
	eager, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: plain}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	in := bertInputs()
	want := run(t, eager, in)

	g, err := trace.Trace(m, names)
	if err != nil {
		t.Fatal(err)
	}
	r, rep, err := compileopt.NewCompiled(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, compileopt.Names())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Applied[compileopt.SDPAKernel] != 2 || rep.Applied[compileopt.GELUKernel] != 2 || rep.Applied[compileopt.RemoveDropout] != 6 {
		t.Errorf("report %s: want 2 attention kernels, 2 GELU kernels and 6 dropouts removed", rep)
	}
	if rep.NodesAfter >= rep.NodesBefore {
		t.Errorf("report %s: the graph did not shrink", rep)
	}
	seg, ok := r.(*execute.Segmented)
	if !ok {
		t.Fatalf("runner is %T, want *execute.Segmented", r)
	}
	if c, h := seg.Segments(); c != 5 || h != 4 {
		t.Errorf("%d compiled segments and %d host nodes, want 5 and 4", c, h)
	}
	// Each attention reads the split projections and writes the merged
	// layout: the head transposes around it are gone.
	for _, n := range g.Nodes() {
		if n.Target == ops.HostSDPA {
			if sm, _ := n.Kwarg("seq_major"); sm != true {
				t.Errorf("%s: seq_major %v, want true (the head transposes folded in)", n.Name, sm)
			}
		}
		if n.Op == ir.CallMethod && n.Target == "permute" {
			t.Errorf("%s: a permute is left in the rewritten graph", n.Name)
		}
	}
	for round := 0; round < 2; round++ {
		closeTo(t, "compiled with every rewrite", run(t, r, in), want, 2e-5)
	}
	// The rewritten graph runs eagerly too (host nodes and all).
	e2, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "eager on the rewritten graph", run(t, e2, in), want, 2e-5)
}

// TestEachRewriteAlone switches on one rewrite at a time: each changes
// what it should and keeps the outputs.
func TestEachRewriteAlone(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewBertTiny(6)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"input_ids", "attention_mask"}
	in := bertInputs()
	plain, err := trace.Trace(m, names)
	if err != nil {
		t.Fatal(err)
	}
	c, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: plain}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	want := run(t, c, in)
	for _, name := range compileopt.Names() {
		g, err := trace.Trace(m, names)
		if err != nil {
			t.Fatal(err)
		}
		r, rep, err := compileopt.NewCompiled(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, []string{name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(rep.Applied) != 1 {
			t.Errorf("%s: report %s, want only it applied", name, rep)
		}
		if rep.Applied[name] == 0 && name != compileopt.DeadCode && name != compileopt.MXInt8Kernel {
			t.Errorf("%s changed nothing on bert-tiny", name)
		}
		_, broken := r.(*execute.Segmented)
		host := name == compileopt.SDPAKernel || name == compileopt.GELUKernel // nothing is packed here
		if broken != host {
			t.Errorf("%s: runner %T", name, r)
		}
		closeTo(t, name, run(t, r, in), want, 2e-5)
	}
}

func TestDeadCodeErasesUnusedChains(t *testing.T) {
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := g.Placeholders()[0]
	if err := g.InsertingAfter(x, func() error {
		s := g.MustAddNode(ir.CallMethod, "size", "size", []any{x}, nil)
		g.MustAddNode(ir.CallFunction, "getitem", "getitem", []any{s, 0}, nil)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := g.Len()
	rep, err := compileopt.Optimize(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, []string{compileopt.DeadCode})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied[compileopt.DeadCode] != 2 || g.Len() != before-2 || g.Node("size") != nil {
		t.Errorf("dead_code: %s; %d nodes left of %d", rep, g.Len(), before)
	}
}

func TestTrainingKeepsHostKernelsOut(t *testing.T) {
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compileopt.Optimize(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{Training: true}, compileopt.Names())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{compileopt.SDPAKernel, compileopt.GELUKernel, compileopt.RemoveDropout} {
		if _, ok := rep.Skipped[name]; !ok {
			t.Errorf("training: %s not skipped (%s)", name, rep)
		}
	}
	if execute.HasGraphBreaks(g) {
		t.Error("training graph has host nodes")
	}
}

func TestParseSelection(t *testing.T) {
	for s, want := range map[string]int{"all": len(compileopt.Names()), "none": 0, "gelu_kernel, dead_code": 2} {
		got, err := compileopt.ParseSelection(s)
		if err != nil || len(got) != want {
			t.Errorf("ParseSelection(%q) = %v, %v; want %d names", s, got, err, want)
		}
	}
	got, _ := compileopt.ParseSelection("gelu_kernel,dead_code")
	if got[0] != compileopt.DeadCode {
		t.Errorf("selection %v not in application order", got)
	}
	_, err := compileopt.ParseSelection("fuse_everything")
	if err == nil || !strings.Contains(err.Error(), "sdpa_kernel") {
		t.Errorf("unknown rewrite: error %v, want one listing the allowed names", err)
	}
	if _, err := compileopt.Optimize(&ir.MaseGraph{Model: &nn.Model{}, Graph: ir.New()}, execute.Mode{}, []string{"nope"}); err == nil {
		t.Error("Optimize accepted an unknown rewrite")
	}
}

// TestMXInt8KernelMatchesPackedModules packs bert-tiny's Linear layers and
// checks compiled mode with host dequantisation (hoisted: two compiled
// segments around one run of host nodes) against eager mode running the
// packed modules' graph op.
func TestMXInt8KernelMatchesPackedModules(t *testing.T) {
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewBertTiny(7)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"input_ids", "attention_mask"}
	mg, err := mase.NewMaseGraph(m, names)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32}); err != nil {
		t.Fatal(err)
	}
	eager, err := execute.NewEager(&ir.MaseGraph{Model: m, Graph: mg.Graph}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	in := bertInputs()
	want := run(t, eager, in)
	g, err := trace.Trace(m, names)
	if err != nil {
		t.Fatal(err)
	}
	r, rep, err := compileopt.NewCompiled(be, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, []string{compileopt.MXInt8Kernel})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied[compileopt.MXInt8Kernel] != 14 {
		t.Errorf("report %s: want the 14 packed Linear layers", rep)
	}
	seg, ok := r.(*execute.Segmented)
	if !ok {
		t.Fatalf("runner %T, want *execute.Segmented", r)
	}
	if c, h := seg.Segments(); c != 2 || h != 28 {
		t.Errorf("%d compiled segments, %d host nodes; want 2 and 28 (weight and bias of 14 layers)", c, h)
	}
	for round := 0; round < 2; round++ {
		closeTo(t, "mxint8_kernel", run(t, r, in), want, 1e-6)
	}
}

// TestMetadataAndCostsOfTheRewrittenGraph runs the metadata passes on a
// graph whose rewrites put host kernels in (it cannot run as one
// computation): every host node gets its result's shape, and the graph
// costs the FLOPs the untouched graph costs.
func TestMetadataAndCostsOfTheRewrittenGraph(t *testing.T) {
	flops := func(rewrite bool) (int64, *ir.MaseGraph) {
		m, err := models.NewBertTiny(1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := trace.Trace(m, []string{"input_ids", "attention_mask"})
		if err != nil {
			t.Fatal(err)
		}
		mg := &ir.MaseGraph{Model: m, Graph: g}
		if rewrite {
			if _, err := compileopt.Optimize(mg, execute.Mode{}, compileopt.Names()); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := passes.InitMetadata(mg); err != nil {
			t.Fatal(err)
		}
		if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: bertInputs()}); err != nil {
			t.Fatal(err)
		}
		_, info, err := passes.AddCostMetadata(mg, passes.CostArgs{})
		if err != nil {
			t.Fatal(err)
		}
		return info["summary"].(*passes.CostSummary).Total.FLOPs, mg
	}
	plain, _ := flops(false)
	rewritten, mg := flops(true)
	hosts := 0
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallFunction || !strings.HasPrefix(n.Target, "gomase.") {
			continue
		}
		hosts++
		out := n.Meta.Common.Results.Get("data_out_0")
		if out == nil || len(out.Shape) == 0 {
			t.Errorf("host node %s: no result shape recorded", n.Name)
		}
	}
	if hosts != 4 {
		t.Fatalf("%d host nodes after every rewrite, want 4 (two attentions, two GELUs)", hosts)
	}
	if rewritten != plain || plain == 0 {
		t.Fatalf("rewritten graph costs %d FLOPs, the untouched one %d: want the same, non-zero", rewritten, plain)
	}
}

// TestSDPAKernelKeepsTransposesOthersRead: a head split that something
// else reads too stays, and the attention keeps the head-major layout.
func TestSDPAKernelKeepsTransposesOthersRead(t *testing.T) {
	g := ir.New()
	x := g.MustAddNode(ir.Placeholder, "x", "x", nil, nil)
	split := func(name string) *ir.Node {
		v := g.MustAddNode(ir.CallMethod, "view_"+name, "view", []any{x, 2, 4, 2, 8}, nil)
		return g.MustAddNode(ir.CallMethod, "split_"+name, "permute", []any{v, 0, 2, 1, 3}, nil)
	}
	q, k, v := split("q"), split("k"), split("v")
	att := g.MustAddNode(ir.CallFunction, "attention", "scaled_dot_product_attention", []any{q, k, v}, nil)
	merged := g.MustAddNode(ir.CallMethod, "merge", "permute", []any{att, 0, 2, 1, 3}, nil)
	extra := g.MustAddNode(ir.CallFunction, "extra", "add", []any{q, 1.0}, nil)
	g.MustAddNode(ir.Output, "output", "output", []any{[]any{merged, extra}}, nil)
	m, err := models.NewBertTiny(1) // any model: the graph calls no module
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compileopt.Optimize(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, []string{compileopt.SDPAKernel})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied[compileopt.SDPAKernel] != 1 {
		t.Fatalf("report %s: want the attention swapped", rep)
	}
	permutes := 0
	for _, n := range g.Nodes() {
		if n.Target == "permute" {
			permutes++
		}
		if n.Target == ops.HostSDPA {
			if _, ok := n.Kwarg("seq_major"); ok {
				t.Errorf("%s: seq_major set although q's split has another reader", n.Name)
			}
		}
	}
	if permutes != 4 {
		t.Errorf("%d permutes left, want all 4", permutes)
	}
}

// TestRewrittenGraphsExportAndImport: a graph every rewrite changed in
// place (dropout removed, GELU and attention as host kernels, packed
// Linear layers replaced by dequantised weights read with get_attr) is
// exported and imported again: the import's check that the graph calls
// the modules the model calls accepts what the rewrites leave, and the
// imported graph computes what the rewritten one does.
func TestRewrittenGraphsExportAndImport(t *testing.T) {
	m, err := models.NewBertTiny(7)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"input_ids", "attention_mask"}
	mg, err := mase.NewMaseGraph(m, names)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: 32}); err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, names)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := &ir.MaseGraph{Model: m, Graph: g, InputNames: names}
	if _, err := compileopt.Optimize(rewritten, execute.Mode{}, compileopt.Names()); err != nil {
		t.Fatal(err)
	}
	eager, err := execute.NewEager(rewritten, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	in := bertInputs()
	want := run(t, eager, in)
	base := filepath.Join(t.TempDir(), "rewritten")
	if err := checkpoint.Export(base, rewritten, checkpoint.Spec{Model: "bert-tiny", Seed: 7}); err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Import(base)
	if err != nil {
		t.Fatal(err)
	}
	again, err := execute.NewEager(back, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	closeTo(t, "imported rewritten graph", run(t, again, in), want, 1e-6)
}
