package passes_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/trace"
)

func withCosts(t *testing.T, mg *ir.MaseGraph, args passes.CostArgs) *passes.CostSummary {
	t.Helper()
	_, info, err := passes.AddCostMetadata(mg, args)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := info["summary"].(*passes.CostSummary)
	if !ok {
		t.Fatalf("info %v has no summary", info)
	}
	if info["flops"] != s.Total.FLOPs || info["bytes"] != s.Total.Bytes {
		t.Errorf("info %v disagrees with the summary's total %+v", info, s.Total)
	}
	return s
}

// TestCostBertTiny: bert-tiny's forward at batch 8 × seq 128 has the
// matmul FLOPs of an independent count from its config. With T = B·S
// tokens, hidden H, intermediate I, L layers, heads nh of width dh:
//
//	per layer: Q, K, V, O projections 4·2·T·H·H, the feed-forward 2·2·T·H·I,
//	attention (q·kᵀ and p·v) 2·2·B·nh·S·S·dh;
//	then the pooler 2·B·H·H and the classifier 2·B·H·labels
//
// = 2·(134 217 728 + 268 435 456 + 67 108 864) + 262 144 + 4 096
// = 939 790 336 ≈ 0.94 GFLOP.
func TestCostBertTiny(t *testing.T) {
	const b, s = 8, 128
	ids := make([][]int32, b)
	for i := range ids {
		ids[i] = make([]int32, s)
		for j := range ids[i] {
			ids[i][j] = int32((i*131 + j*7) % 30522)
		}
	}
	mg := withMetadata(t, bertGraph(t, nil), map[string]*tensors.Tensor{"input_ids": tensors.FromValue(ids)})
	sum := withCosts(t, mg, passes.CostArgs{})

	cfg := models.BertTinyConfig()
	T, H, I, L := int64(b*s), int64(cfg.HiddenSize), int64(cfg.IntermediateSize), int64(cfg.NumHiddenLayers)
	nh := int64(cfg.NumAttentionHeads)
	dh := H / nh
	perLayer := 4*2*T*H*H + 2*2*T*H*I + 2*2*b*nh*s*s*dh
	want := L*perLayer + 2*b*H*H + 2*b*H*int64(cfg.NumLabels)
	if want != 939790336 {
		t.Fatalf("the independent count is %d, not 939 790 336", want)
	}
	got := sum.Total.FLOPs
	if rel := math.Abs(float64(got-want)) / float64(want); rel > 0.001 {
		t.Errorf("bert-tiny b%d×%d FLOPs %d, want %d (%.3f%% off, allowed 0.1%%)", b, s, got, want, 100*rel)
	}
	if got != want {
		t.Errorf("bert-tiny FLOPs %d, want exactly %d", got, want)
	}
	t.Logf("bert-tiny b8×128: %d FLOPs, %d element-wise FLOPs, %d bytes", got, sum.Total.ElementwiseFLOPs, sum.Total.Bytes)

	// Per module, FlopCounterMode-style (a module holds its submodules).
	for path, want := range map[string]int64{
		"bert.encoder.layer.0":                        perLayer,
		"bert.encoder.layer.1":                        perLayer,
		"bert.encoder":                                L * perLayer,
		"bert.encoder.layer.0.attention":              4*2*T*H*H + 2*2*b*nh*s*s*dh, // the projections and attention itself
		"bert.encoder.layer.0.attention.self.query":   2 * T * H * H,
		"bert.encoder.layer.0.intermediate.dense":     2 * T * H * I,
		"bert.pooler":                                 2 * b * H * H,
		"classifier":                                  2 * b * H * int64(cfg.NumLabels),
		"bert.embeddings":                             0, // lookups: bytes only
		"bert.encoder.layer.0.attention.output.dense": 2 * T * H * H,
	} {
		m, ok := sum.Module(path)
		if !ok || m.FLOPs != want {
			t.Errorf("module %s: %+v, %v; want %d FLOPs", path, m, ok, want)
		}
	}
	emb, _ := sum.Module("bert.embeddings.word_embeddings")
	if wantBytes := int64(4*b*s + 4*b*s*H + 4*b*s*H); emb.Bytes != wantBytes || emb.ElementwiseFLOPs != 0 {
		t.Errorf("word embeddings %+v: want 0 FLOPs and %d bytes (ids, rows gathered, output)", emb, wantBytes)
	}

	// Every node is annotated; views and eval-mode dropout cost nothing.
	views, noops := 0, 0
	for _, n := range mg.Graph.Nodes() {
		c := n.Meta.Software[passes.CostKey].(map[string]any)
		switch c["class"] {
		case "view":
			views++
			if c["flops"] != int64(0) || c["bytes"] != int64(0) || c["view"] != true {
				t.Errorf("view %s costs %v", n.Name, c)
			}
		case "no_op":
			noops++
			if c["bytes"] != int64(0) || c["no_op"] != true {
				t.Errorf("no-op %s costs %v", n.Name, c)
			}
		}
	}
	if views == 0 || noops == 0 || sum.Total.Views != views || sum.Total.NoOps != noops {
		t.Errorf("%d views and %d no-ops annotated, summary %+v", views, noops, sum.Total)
	}
	if c := mg.Graph.Node("bert_embeddings_dropout").Meta.Software[passes.CostKey].(map[string]any); c["class"] != "no_op" {
		t.Errorf("eval-mode dropout: %v", c)
	}
	sdpa := mg.Graph.Node("scaled_dot_product_attention").Meta.Software[passes.CostKey].(map[string]any)
	if sdpa["module"] != "bert.encoder.layer.0.attention" || sdpa["flops"] != 2*2*b*nh*s*s*dh {
		t.Errorf("attention of layer 0: %v", sdpa)
	}

	// The JSON form carries the totals and every node.
	js, err := sum.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Total struct {
			FLOPs int64 `json:"flops"`
			EW    int64 `json:"elementwise_flops"`
			Bytes int64 `json:"bytes"`
		} `json:"total"`
		PerModule map[string]json.RawMessage `json:"per_module"`
		Nodes     []struct {
			Name  string `json:"name"`
			Op    string `json:"op"`
			FLOPs int64  `json:"flops"`
			Bytes int64  `json:"bytes"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.Total.FLOPs != want || back.Total.EW != sum.Total.ElementwiseFLOPs || back.Total.Bytes != sum.Total.Bytes ||
		len(back.Nodes) != mg.Graph.Len() || back.PerModule["bert.encoder"] == nil {
		t.Errorf("JSON form %s", js[:min(len(js), 400)])
	}

	// The annotations survive a MaseGraph checkpoint.
	base := filepath.Join(t.TempDir(), "bert_costs")
	if err := checkpoint.Export(base, mg, checkpoint.Spec{}); err != nil {
		t.Fatal(err)
	}
	imported, err := checkpoint.Import(base)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := passes.CostSummaryOf(imported); err != nil || again.Total != sum.Total || len(again.PerModule) != len(sum.PerModule) {
		t.Errorf("after a checkpoint: %+v, %v; want %+v", again, err, sum.Total)
	}

	// Train mode: dropout computes.
	train := withCosts(t, mg, passes.CostArgs{Training: true})
	if train.Total.FLOPs != want || train.Total.ElementwiseFLOPs <= sum.Total.ElementwiseFLOPs || train.Total.NoOps >= sum.Total.NoOps {
		t.Errorf("train mode %+v vs eval %+v: want the same FLOPs, more element-wise work, fewer no-ops", train.Total, sum.Total)
	}
}

// TestCostResNet18: ResNet-18 at 224×224, batch 1. An independent count
// of its convolutions and fc in multiply-adds:
//
//	conv1   112²·64·(3·7·7)                            118 013 952
//	layer1  4 · 56²·64·(64·9)                           462 422 016
//	layer2  28²·128·(64·9) + 28²·128·64 + 3·28²·128·(128·9) 411 041 792
//	layer3, layer4: the same pattern, each               411 041 792
//	fc      512·1000                                         512 000
//	total                                              1 814 073 344 MAC
//
// which is torchvision's 1.81 GFLOPS (meaning GMAC) and the widely quoted
// 1.82 GMAC to 0.33%: ptflops' 1.82 also counts batch norm, ReLU, pooling
// and the residual adds as MACs. FlopCounterMode counts the convolutions
// and the fc only, 2 FLOPs a MAC: 3 628 146 688 FLOPs.
func TestCostResNet18(t *testing.T) {
	m, err := models.NewResNet18(1000, 3)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	mg = withMetadata(t, mg, map[string]*tensors.Tensor{"x": models.RandomImages(1, 1, 224, 224)})
	sum := withCosts(t, mg, passes.CostArgs{})
	macs := int64(112*112*64*3*7*7) + 4*56*56*64*64*9
	for _, hw := range []int64{28, 14, 7} {
		c := 64 * 56 / hw // output channels: 128, 256, 512
		macs += hw*hw*c*(c/2)*9 + hw*hw*c*(c/2) + 3*hw*hw*c*c*9
	}
	macs += 512 * 1000
	if macs != 1814073344 {
		t.Fatalf("independent count %d MAC, want 1 814 073 344", macs)
	}
	if got := sum.Total.FLOPs; got != 2*macs {
		t.Errorf("ResNet-18 FLOPs %d, want 2·%d = %d", got, macs, 2*macs)
	}
	published := 2 * 1.82e9
	if rel := math.Abs(float64(sum.Total.FLOPs)-published) / published; rel > 0.005 {
		t.Errorf("ResNet-18 FLOPs %d are %.2f%% from the published 2·1.82 G", sum.Total.FLOPs, 100*rel)
	}
	t.Logf("ResNet-18 224×224 b1: %d FLOPs (%.4f GMAC), %d element-wise FLOPs, %d bytes",
		sum.Total.FLOPs, float64(sum.Total.FLOPs)/2e9, sum.Total.ElementwiseFLOPs, sum.Total.Bytes)
	if l1, _ := sum.Module("layer1"); l1.FLOPs != 2*4*56*56*64*64*9 {
		t.Errorf("layer1: %+v", l1)
	}
	if add := mg.Graph.Node("add").Meta.Software[passes.CostKey].(map[string]any); add["module"] != "layer1.0" || add["elementwise_flops"] != int64(64*56*56) {
		t.Errorf("first residual add: %v", add)
	}
	if fl := mg.Graph.Node("flatten").Meta.Software[passes.CostKey].(map[string]any); fl["class"] != "view" || fl["bytes"] != int64(0) {
		t.Errorf("flatten: %v", fl)
	}
}

// convToy is one Conv2d, to cost it from a traced graph's metadata.
type convToy struct{ nn.Container }

func (*convToy) InputNames() []string    { return []string{"x"} }
func (*convToy) DefaultInputs() []string { return []string{"x"} }
func (*convToy) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	t.Output(t.Module("conv", in["x"]))
	return nil
}

// TestCostConv2dGraph: Conv2d(8, 16, 3, stride 2, padding 1, groups 4) on
// [2, 8, 15, 15] gives [2, 16, 8, 8] (⌊(15 + 2 − 2 − 1)/2⌋ + 1 = 8), so
// 2·(2·16·8·8)·(8/4)·3·3 = 73 728 FLOPs and one bias add per output.
func TestCostConv2dGraph(t *testing.T) {
	conv := &nn.Conv2d{InChannels: 8, OutChannels: 16, KernelSize: [2]int{3, 3}, Stride: [2]int{2, 2},
		Padding: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 4, Bias: true}
	m, err := nn.NewModel(&convToy{nn.Container{Type: "ConvToy", Kids: []nn.Named{{Name: "conv", Module: conv}}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 2*8*15*15)
	mg = withMetadata(t, mg, map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(x, 2, 8, 15, 15)})
	sum := withCosts(t, mg, passes.CostArgs{})
	c, _ := sum.Module("conv")
	out := int64(2 * 16 * 8 * 8)
	if c.FLOPs != 73728 || c.ElementwiseFLOPs != out || c.BytesRead != 4*(2*8*15*15+16*2*3*3+16) || c.BytesWritten != 4*out {
		t.Errorf("conv: %+v", c)
	}
}

func TestParseCostArgs(t *testing.T) {
	if a, err := passes.ParseCostArgs(map[string]any{"training": true}); err != nil || !a.Training {
		t.Errorf("training: %+v, %v", a, err)
	}
	if _, err := passes.ParseCostArgs(map[string]any{"mode": "eval"}); err == nil {
		t.Error("unknown key accepted")
	}
}

// TestCostLinearVariants: quantised, MXINT8-packed and LoRA Linears are
// costed as the Linear they declare themselves to be: the same matmul
// FLOPs (LoRA adds its adapter's two matmuls), their quantisers and
// dequantisers as element-wise work, a packed layer's words as the bytes
// it reads.
func TestCostLinearVariants(t *testing.T) {
	cost := func(mg *ir.MaseGraph) *passes.CostSummary {
		t.Helper()
		return withCosts(t, withMetadata(t, mg, inputIDs()), passes.CostArgs{})
	}
	base := cost(bertTiny(t))
	query := "bert.encoder.layer.0.attention.self.query"
	baseQ, _ := base.Module(query)

	mg := bertTiny(t)
	args, _ := passes.ParseQuantizeArgs(t3Config(8, 4))
	if _, _, err := passes.QuantizeTransform(mg, args); err != nil {
		t.Fatal(err)
	}
	q := cost(mg)
	qQ, _ := q.Module(query)
	// integer quantises data_in [2,12,128], the weight [128,128] and the bias [128].
	if q.Total.FLOPs != base.Total.FLOPs || qQ.ElementwiseFLOPs != baseQ.ElementwiseFLOPs+2*12*128+128*128+128 {
		t.Errorf("quantised: %+v (query %+v), base %+v (query %+v)", q.Total, qQ, base.Total, baseQ)
	}

	mg, _, err := passes.PackLinears(bertTiny(t), passes.PackOptions{GroupSize: 32, Embeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	p := cost(mg)
	pQ, _ := p.Module(query)
	emb, _ := p.Module("bert.embeddings.word_embeddings")
	if p.Total.FLOPs != base.Total.FLOPs || pQ.ElementwiseFLOPs != baseQ.ElementwiseFLOPs+128*128+128 ||
		pQ.BytesRead >= baseQ.BytesRead || emb.FLOPs != 0 || emb.BytesRead == 0 {
		t.Errorf("packed: %+v (query %+v, embeddings %+v), base %+v (query %+v)", p.Total, pQ, emb, base.Total, baseQ)
	}

	const rank = 6
	var extra int64 // the adapters' matmuls, from the base graph's Linear shapes
	baseMG := bertTiny(t)
	withMetadata(t, baseMG, inputIDs())
	for _, n := range baseMG.Graph.Nodes() {
		if n.Op != ir.CallModule || n.Meta.Common.MaseOp != "linear" {
			continue
		}
		in, out := n.Meta.Common.Args.Get("data_in_0").Shape, n.Meta.Common.Results.Get("data_out_0").Shape
		rows := int64(1)
		for _, d := range out[:len(out)-1] {
			rows *= int64(d)
		}
		extra += 2*rows*int64(in[len(in)-1])*rank + 2*rows*rank*int64(out[len(out)-1])
	}
	mg = bertTiny(t)
	if _, _, err := passes.InsertLoRA(mg, passes.LoRAArgs{Rank: rank, Alpha: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	l := cost(mg)
	if l.Total.FLOPs != base.Total.FLOPs+extra {
		t.Errorf("LoRA rank %d: %d FLOPs, want %d + %d", rank, l.Total.FLOPs, base.Total.FLOPs, extra)
	}
}
