package models

import (
	"math"
	"strings"
	"testing"
)

// TestBertConfigBounds: every field is checked before anything is built;
// the error names the field, its value and what is allowed. Before the fix,
// sizes of 10^9–10^12, dropout 5.0 or −1.0 and a NaN layer_norm_eps passed.
func TestBertConfigBounds(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		edit func(*BertConfig)
		want string
	}{
		{"bert-tiny", func(*BertConfig) {}, ""},
		{"no dropout", func(c *BertConfig) { c.HiddenDropoutProb, c.AttentionProbsDropoutProb = 0, 0 }, ""},
		{"hidden_size 1e12", func(c *BertConfig) { c.HiddenSize = 1e12 }, "bert config: hidden_size 1000000000000 is out of range (allowed: 1 to 65536)"},
		{"intermediate_size 1e9", func(c *BertConfig) { c.IntermediateSize = 1e9 }, "intermediate_size 1000000000 is out of range (allowed: 1 to 262144)"},
		{"vocab_size 1e10", func(c *BertConfig) { c.VocabSize = 1e10 }, "vocab_size 10000000000 is out of range (allowed: 1 to 2097152)"},
		{"num_hidden_layers 1e9", func(c *BertConfig) { c.NumHiddenLayers = 1e9 }, "num_hidden_layers 1000000000 is out of range (allowed: 1 to 256)"},
		{"num_attention_heads 0", func(c *BertConfig) { c.NumAttentionHeads = 0 }, "num_attention_heads 0 is out of range (allowed: 1 to 1024)"},
		{"max_position_embeddings -1", func(c *BertConfig) { c.MaxPositionEmbeddings = -1 }, "max_position_embeddings -1 is out of range (allowed: 1 to 131072)"},
		{"type_vocab_size 1e9", func(c *BertConfig) { c.TypeVocabSize = 1e9 }, "type_vocab_size 1000000000 is out of range (allowed: 1 to 1024)"},
		{"num_labels 0", func(c *BertConfig) { c.NumLabels = 0 }, "num_labels 0 is out of range (allowed: 1 to 1048576)"},
		{"too many parameters", func(c *BertConfig) { c.HiddenSize, c.IntermediateSize, c.NumHiddenLayers = 8192, 32768, 48 },
			"the model (38981214210 float32 parameters) needs 145.2 GiB, more than the 8 GiB a model may take (limits.MaxModelBytes)"},
		{"hidden_dropout_prob 5.0", func(c *BertConfig) { c.HiddenDropoutProb = 5 }, "hidden_dropout_prob 5 is not a dropout probability (allowed: 0 ≤ p < 1)"},
		{"hidden_dropout_prob -1.0", func(c *BertConfig) { c.HiddenDropoutProb = -1 }, "hidden_dropout_prob -1 is not a dropout probability"},
		{"attention_probs_dropout_prob NaN", func(c *BertConfig) { c.AttentionProbsDropoutProb = nan }, "attention_probs_dropout_prob NaN is not a dropout probability"},
		{"layer_norm_eps NaN", func(c *BertConfig) { c.LayerNormEps = nan }, "layer_norm_eps NaN is out of range (allowed: a finite number above 0)"},
		{"layer_norm_eps +Inf", func(c *BertConfig) { c.LayerNormEps = inf }, "layer_norm_eps +Inf is out of range"},
		{"layer_norm_eps 0", func(c *BertConfig) { c.LayerNormEps = 0 }, "layer_norm_eps 0 is out of range"},
		{"initializer_range NaN", func(c *BertConfig) { c.InitializerRange = nan }, "initializer_range NaN is out of range (allowed: a finite number, 0 or more)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := BertTinyConfig()
			c.edit(&cfg)
			err := cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if _, err := NewBertForSequenceClassification(cfg, 1); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewBertForSequenceClassification: %v, want %q", err, c.want)
			}
		})
	}
}

// TestNumParameters: the estimate Validate checks against the limits is
// the exact parameter count of the model built.
func TestNumParameters(t *testing.T) {
	for _, cfg := range []BertConfig{
		BertTinyConfig(),
		{VocabSize: 40, HiddenSize: 32, NumHiddenLayers: 3, NumAttentionHeads: 4, IntermediateSize: 64, MaxPositionEmbeddings: 64,
			TypeVocabSize: 3, HiddenDropoutProb: 0.1, AttentionProbsDropoutProb: 0.1, LayerNormEps: 1e-12, InitializerRange: 0.02, NumLabels: 5},
	} {
		m, err := NewBertForSequenceClassification(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.NumParameters(), int64(m.NumParameters("")); got != want {
			t.Errorf("%+v: NumParameters %d, the model has %d", cfg, got, want)
		}
	}
	for _, cfg := range []ResNetConfig{ResNet18Config(), {Layers: [4]int{1, 2, 1, 3}, NumClasses: 7}} {
		m, err := NewResNet(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.NumParameters(), int64(m.NumParameters("")); got != want {
			t.Errorf("%+v: NumParameters %d, the model has %d", cfg, got, want)
		}
	}
}

// TestResNetConfigBounds: a ResNet config with 10^9 blocks or classes is
// refused before it is built (before the fix, Validate accepted it).
func TestResNetConfigBounds(t *testing.T) {
	for _, c := range []struct {
		cfg  ResNetConfig
		want string
	}{
		{ResNetConfig{Layers: [4]int{2, 1e9, 2, 2}, NumClasses: 10}, "resnet config: layers[1] 1000000000 is out of range (allowed: 1 to 64)"},
		{ResNetConfig{Layers: [4]int{2, 2, 2, 2}, NumClasses: 1e9}, "resnet config: num_classes 1000000000 is out of range (allowed: 1 to 1048576)"},
		{ResNetConfig{Layers: [4]int{64, 64, 64, 64}, NumClasses: 1 << 20}, ""},
	} {
		err := c.cfg.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.cfg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}
