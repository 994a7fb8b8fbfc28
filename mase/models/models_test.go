package models

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

func TestBertTinyStructure(t *testing.T) {
	m, err := NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.NumParameters(""); n != 4386178 {
		t.Errorf("parameters = %d, want 4,386,178", n)
	}
	for path, want := range map[string]int{"bert.embeddings": 3972864, "bert.encoder": 396544, "bert.pooler": 16512, "classifier": 258, "bert": 4385920} {
		if n := m.NumParameters(path); n != want {
			t.Errorf("parameters of %s = %d, want %d", path, n, want)
		}
	}
	linears := 0
	for _, nm := range m.Modules() {
		if _, ok := nm.Module.(*nn.Linear); ok {
			linears++
		}
	}
	if linears != 14 {
		t.Errorf("%d Linear modules, want 14", linears)
	}
	tree := m.String()
	for _, want := range []string{"BertForSequenceClassification(", "(word_embeddings): Embedding(30522, 128, padding_idx=0)",
		"(intermediate_act_fn): GELUActivation()", "(classifier): Linear(in_features=128, out_features=2, bias=True)",
		"LayerNorm((128,), eps=1e-12, elementwise_affine=True)"} {
		if !strings.Contains(tree, want) {
			t.Errorf("module tree lacks %q", want)
		}
	}
	// HF init: padding row of word embeddings is zero, biases zero, LN weight one.
	w, _, err := m.ParamValues("bert.embeddings.word_embeddings.weight")
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 128; j++ {
		if w[j] != 0 {
			t.Fatalf("padding row not zero at %d", j)
		}
	}
	if b, _, _ := m.ParamValues("classifier.bias"); b[0] != 0 || b[1] != 0 {
		t.Errorf("classifier bias %v", b)
	}
	if g, _, _ := m.ParamValues("bert.embeddings.LayerNorm.weight"); g[5] != 1 {
		t.Errorf("LayerNorm weight %v", g[5])
	}
	// Same seed, same weights; other seed, other weights.
	m2, _ := NewBertTiny(1)
	m3, _ := NewBertTiny(2)
	a, _, _ := m.ParamValues("classifier.weight")
	b, _, _ := m2.ParamValues("classifier.weight")
	c, _, _ := m3.ParamValues("classifier.weight")
	if a[3] != b[3] || a[3] == c[3] {
		t.Error("initialisation is not determined by the seed")
	}
}

func TestBertConfigValidate(t *testing.T) {
	cfg := BertTinyConfig()
	cfg.NumAttentionHeads = 3
	if _, err := NewBertForSequenceClassification(cfg, 0); err == nil || !strings.Contains(err.Error(), "num_attention_heads") {
		t.Errorf("bad heads: %v", err)
	}
	if _, err := New("resnet", 0); err == nil || !strings.Contains(err.Error(), `unknown model "resnet" (allowed: bert-tiny, mlp, resnet18)`) {
		t.Errorf("unknown model: %v", err)
	}
}

func TestMLPGraphAndValues(t *testing.T) {
	m, err := NewMLP(3)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range g.Nodes() {
		kinds = append(kinds, n.Name+":"+string(n.Op))
	}
	if got := strings.Join(kinds, " "); got != "x:placeholder flatten:call_function fc1:call_module relu:call_function output:output" {
		t.Errorf("MLP graph = %s", got)
	}
	if v, _ := g.Node("relu").Kwarg("inplace"); v != false {
		t.Errorf("relu inplace kwarg = %v", v)
	}
	x := []float32{0.5, -1, 2, 0.25}
	run, err := execute.Compile(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Run(map[string]*tensors.Tensor{"x": tensors.FromFlatDataAndDimensions(x, 1, 2, 2)})
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	w, _, _ := m.ParamValues("fc1.weight")
	b, _, _ := m.ParamValues("fc1.bias")
	for o := 0; o < 8; o++ { // plain-Go oracle: relu(W x + b)
		acc := float64(b[o])
		for i := 0; i < 4; i++ {
			acc += float64(w[o*4+i]) * float64(x[i])
		}
		want := math.Max(acc, 0)
		if math.Abs(float64(got[o])-want) > 1e-5 {
			t.Errorf("out[%d] = %v, want %v", o, got[o], want)
		}
	}
	_ = ir.Output
}

func TestConfigRoundTrip(t *testing.T) {
	cfg := BertTinyConfig()
	cfg.HiddenSize, cfg.NumHiddenLayers = 192, 3
	m, err := NewBertForSequenceClassification(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	js, ok := ConfigOf(m)
	if !ok {
		t.Fatal("bert has a config")
	}
	back, err := NewFromConfig("bert-tiny", js, 1)
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != m.String() {
		t.Errorf("rebuilt tree differs:\n%s\nwant\n%s", back.String(), m.String())
	}
	mlp, _ := NewMLP(1)
	if _, ok := ConfigOf(mlp); ok {
		t.Error("the MLP has no config")
	}
	if _, err := NewFromConfig("bert-tiny", []byte(`{"hidden_sise": 3}`), 1); err == nil || !strings.Contains(err.Error(), `unknown field "hidden_sise"`) {
		t.Errorf("bad field: %v", err)
	}
	if _, err := NewFromConfig("bert-tiny", []byte(`{"hidden_size": 100, "num_attention_heads": 3}`), 1); err == nil || !strings.Contains(err.Error(), "not a multiple") {
		t.Errorf("invalid config: %v", err)
	}
}
