// Package models builds the networks of the labs as gomase module trees
// with traceable forwards: BERT for sequence classification (bert-tiny),
// the small MLP of the hardware lab and torchvision's ResNet-18 (Lab 4's
// timing experiment).
package models

import (
	"fmt"
	"math"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// BertConfig holds the HuggingFace BertConfig fields the model uses.
type BertConfig struct {
	VocabSize                 int     `json:"vocab_size"`
	HiddenSize                int     `json:"hidden_size"`
	NumHiddenLayers           int     `json:"num_hidden_layers"`
	NumAttentionHeads         int     `json:"num_attention_heads"`
	IntermediateSize          int     `json:"intermediate_size"`
	MaxPositionEmbeddings     int     `json:"max_position_embeddings"`
	TypeVocabSize             int     `json:"type_vocab_size"`
	HiddenDropoutProb         float64 `json:"hidden_dropout_prob"`
	AttentionProbsDropoutProb float64 `json:"attention_probs_dropout_prob"`
	LayerNormEps              float64 `json:"layer_norm_eps"`
	InitializerRange          float64 `json:"initializer_range"`
	PadTokenID                int     `json:"pad_token_id"`
	NumLabels                 int     `json:"num_labels"`
}

// BertTinyConfig is prajjwal1/bert-tiny's config.json with a 2-label head.
func BertTinyConfig() BertConfig {
	return BertConfig{
		VocabSize: 30522, HiddenSize: 128, NumHiddenLayers: 2, NumAttentionHeads: 2,
		IntermediateSize: 512, MaxPositionEmbeddings: 512, TypeVocabSize: 2,
		HiddenDropoutProb: 0.1, AttentionProbsDropoutProb: 0.1, LayerNormEps: 1e-12,
		InitializerRange: 0.02, PadTokenID: 0, NumLabels: 2,
	}
}

// Validate checks the config as transformers and PyTorch would, and before
// anything is allocated: every size within its bound (limits.HiddenSize,
// ...), hidden_size a multiple of num_attention_heads, pad_token_id inside
// the vocabulary, dropout probabilities in [0, 1), layer_norm_eps positive
// and finite, initializer_range finite and not negative, and the
// parameters (ParamBytes) within limits.MaxModelBytes and the memory
// available. The error names the first bad field, its value and what is
// allowed.
func (c BertConfig) Validate() error {
	for _, f := range []struct {
		bound limits.Int
		v     int
	}{{limits.VocabSize, c.VocabSize}, {limits.HiddenSize, c.HiddenSize}, {limits.NumHiddenLayers, c.NumHiddenLayers},
		{limits.NumAttentionHeads, c.NumAttentionHeads}, {limits.IntermediateSize, c.IntermediateSize},
		{limits.MaxPositionEmbeddings, c.MaxPositionEmbeddings}, {limits.TypeVocabSize, c.TypeVocabSize}, {limits.NumLabels, c.NumLabels}} {
		if err := f.bound.Check(f.v); err != nil {
			return fmt.Errorf("bert config: %w", err)
		}
	}
	if c.HiddenSize%c.NumAttentionHeads != 0 {
		return fmt.Errorf("bert config: hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize {
		return fmt.Errorf("bert config: pad_token_id %d outside the vocabulary [0, %d)", c.PadTokenID, c.VocabSize)
	}
	for _, err := range []error{
		limits.Probability("hidden_dropout_prob", c.HiddenDropoutProb),
		limits.Probability("attention_probs_dropout_prob", c.AttentionProbsDropoutProb),
		limits.PositiveFinite("layer_norm_eps", c.LayerNormEps),
		limits.NonNegativeFinite("initializer_range", c.InitializerRange),
		limits.ModelBytes(fmt.Sprintf("the model (%d float32 parameters)", c.NumParameters()), 4*c.NumParameters()),
	} {
		if err != nil {
			return fmt.Errorf("bert config: %w", err)
		}
	}
	return nil
}

// NumParameters is the number of parameters of the
// BertForSequenceClassification the config builds (4,386,178 for
// bert-tiny with 2 labels). It is exact for a config whose sizes are
// within their bounds (Validate checks them first).
func (c BertConfig) NumParameters() int64 {
	h, i := int64(c.HiddenSize), int64(c.IntermediateSize)
	embeddings := (int64(c.VocabSize)+int64(c.MaxPositionEmbeddings)+int64(c.TypeVocabSize))*h + 2*h
	layer := 4*(h*h+h) + 2*h + // query, key, value, output dense; LayerNorm
		(h*i + i) + (i*h + h) + 2*h // intermediate and output dense; LayerNorm
	pooler := h*h + h
	classifier := h*int64(c.NumLabels) + int64(c.NumLabels)
	return embeddings + int64(c.NumHiddenLayers)*layer + pooler + classifier
}

// BertForSequenceClassification is the root module of HF's class of that
// name, with HF's module tree and parameter names.
type BertForSequenceClassification struct {
	nn.Container
	Config BertConfig
}

// NewBertForSequenceClassification builds the model with HF's random
// initialisation (normal(0, initializer_range) for Linear and Embedding
// weights, zero biases, padding row zero, LayerNorm 1/0), seeded.
func NewBertForSequenceClassification(cfg BertConfig, seed uint64) (*nn.Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	init := nn.Normal(cfg.InitializerRange)
	linear := func(in, out int) *nn.Linear {
		l := nn.NewLinear(in, out, true)
		l.WeightInit, l.BiasInit = init, nn.Zeros
		return l
	}
	embedding := func(num, dim, pad int) *nn.Embedding {
		e := nn.NewEmbedding(num, dim)
		e.Init, e.PaddingIdx = init, pad
		return e
	}
	ln := func() *nn.LayerNorm { return &nn.LayerNorm{Dim: cfg.HiddenSize, Eps: cfg.LayerNormEps} }
	drop := func(p float64) *nn.Dropout { return &nn.Dropout{P: p} }
	h := cfg.HiddenSize
	c := func(typ string, kids ...nn.Named) *nn.Container { return &nn.Container{Type: typ, Kids: kids} }

	var layers []nn.Named
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		layers = append(layers, nn.Named{Name: fmt.Sprint(i), Module: c("BertLayer",
			nn.Named{Name: "attention", Module: c("BertAttention",
				nn.Named{Name: "self", Module: c("BertSdpaSelfAttention",
					nn.Named{Name: "query", Module: linear(h, h)},
					nn.Named{Name: "key", Module: linear(h, h)},
					nn.Named{Name: "value", Module: linear(h, h)},
					nn.Named{Name: "dropout", Module: drop(cfg.AttentionProbsDropoutProb)})},
				nn.Named{Name: "output", Module: c("BertSelfOutput",
					nn.Named{Name: "dense", Module: linear(h, h)},
					nn.Named{Name: "LayerNorm", Module: ln()},
					nn.Named{Name: "dropout", Module: drop(cfg.HiddenDropoutProb)})})},
			nn.Named{Name: "intermediate", Module: c("BertIntermediate",
				nn.Named{Name: "dense", Module: linear(h, cfg.IntermediateSize)},
				nn.Named{Name: "intermediate_act_fn", Module: nn.NewGELU("GELUActivation")})},
			nn.Named{Name: "output", Module: c("BertOutput",
				nn.Named{Name: "dense", Module: linear(cfg.IntermediateSize, h)},
				nn.Named{Name: "LayerNorm", Module: ln()},
				nn.Named{Name: "dropout", Module: drop(cfg.HiddenDropoutProb)})})})
	}
	root := &BertForSequenceClassification{Config: cfg, Container: *c("BertForSequenceClassification",
		nn.Named{Name: "bert", Module: c("BertModel",
			nn.Named{Name: "embeddings", Module: c("BertEmbeddings",
				nn.Named{Name: "word_embeddings", Module: embedding(cfg.VocabSize, h, cfg.PadTokenID)},
				nn.Named{Name: "position_embeddings", Module: embedding(cfg.MaxPositionEmbeddings, h, -1)},
				nn.Named{Name: "token_type_embeddings", Module: embedding(cfg.TypeVocabSize, h, -1)},
				nn.Named{Name: "LayerNorm", Module: ln()},
				nn.Named{Name: "dropout", Module: drop(cfg.HiddenDropoutProb)})},
			nn.Named{Name: "encoder", Module: c("BertEncoder",
				nn.Named{Name: "layer", Module: c("ModuleList", layers...)})},
			nn.Named{Name: "pooler", Module: c("BertPooler",
				nn.Named{Name: "dense", Module: linear(h, h)},
				nn.Named{Name: "activation", Module: nn.NewTanh()})})},
		nn.Named{Name: "dropout", Module: drop(cfg.HiddenDropoutProb)},
		nn.Named{Name: "classifier", Module: linear(h, cfg.NumLabels)})}
	return nn.NewModel(root, seed)
}

// TokenLimits returns the sizes of m's word and position embedding
// tables (BERT's bert.embeddings.word_embeddings and
// position_embeddings): token ids must stay below vocab, and sequences
// within positions tokens. ok is false for a model without them.
func TokenLimits(m *nn.Model) (vocab, positions int, ok bool) {
	if m == nil {
		return 0, 0, false
	}
	w, _ := m.Module("bert.embeddings.word_embeddings")
	p, _ := m.Module("bert.embeddings.position_embeddings")
	we, okW := w.(*nn.Embedding)
	pe, okP := p.(*nn.Embedding)
	if !okW || !okP {
		return 0, 0, false
	}
	return we.NumEmbeddings, pe.NumEmbeddings, true
}

// NewBertTiny builds bert-tiny for 2-label sequence classification.
func NewBertTiny(seed uint64) (*nn.Model, error) {
	return NewBertForSequenceClassification(BertTinyConfig(), seed)
}

// InputNames implements trace.Forwarder: the inputs MASE's hf_input_names
// may name.
func (b *BertForSequenceClassification) InputNames() []string {
	return []string{"input_ids", "attention_mask", "labels"}
}

// DefaultInputs implements trace.Forwarder: HF tracing's default.
func (b *BertForSequenceClassification) DefaultInputs() []string { return []string{"input_ids"} }

// Forward implements trace.Forwarder. It records HF's BertForSequenceClassification
// forward (SDPA attention) in eval-mode form; dropout nodes act in train mode.
func (b *BertForSequenceClassification) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	cfg := b.Config
	ids := in["input_ids"]
	if ids == nil {
		return fmt.Errorf("BertForSequenceClassification needs input_ids")
	}
	// Shapes: batch and sequence length.
	inputShape := t.Method("size", ids)
	seqLen := t.Fn("getitem", inputShape, 1)

	// Attention mask: the given one, or HF's default of ones.
	mask := in["attention_mask"]
	if mask == nil {
		mask = t.FnKw("ones", []any{inputShape}, map[string]any{"dtype": "float32"})
	}
	// Extended additive mask [B, 1, 1, S]: (1 - mask) * finfo(float32).min.
	ext := t.Method("unsqueeze", t.Method("unsqueeze", mask, 1), 2)
	ext = t.Method("to", ext, "float32")
	ext = t.Fn("mul", t.Fn("sub", 1.0, ext), -math.MaxFloat32)

	// Embeddings.
	tokenTypes := t.FnKw("zeros", []any{inputShape}, map[string]any{"dtype": "int64"})
	positions := t.Method("unsqueeze", t.FnKw("arange", []any{seqLen}, map[string]any{"dtype": "int64"}), 0)
	words := t.Module("bert.embeddings.word_embeddings", ids)
	types := t.Module("bert.embeddings.token_type_embeddings", tokenTypes)
	emb := t.Fn("add", words, types)
	emb = t.Fn("add", emb, t.Module("bert.embeddings.position_embeddings", positions))
	emb = t.Module("bert.embeddings.LayerNorm", emb)
	hidden := t.Module("bert.embeddings.dropout", emb)

	heads := cfg.NumAttentionHeads
	headDim := cfg.HiddenSize / heads
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		p := fmt.Sprintf("bert.encoder.layer.%d.", i)
		hs := t.Method("size", hidden)
		batch, seq := t.Fn("getitem", hs, 0), t.Fn("getitem", hs, 1)
		split := func(x *ir.Node) *ir.Node { // [B,S,H] → [B,heads,S,headDim]
			return t.Method("permute", t.Method("view", x, batch, seq, heads, headDim), 0, 2, 1, 3)
		}
		q := split(t.Module(p+"attention.self.query", hidden))
		k := split(t.Module(p+"attention.self.key", hidden))
		v := split(t.Module(p+"attention.self.value", hidden))
		att := t.FnKw("scaled_dot_product_attention", []any{q, k, v},
			map[string]any{"attn_mask": ext, "dropout_p": cfg.AttentionProbsDropoutProb, "is_causal": false})
		att = t.Method("reshape", t.Method("permute", att, 0, 2, 1, 3), batch, seq, cfg.HiddenSize)
		x := t.Module(p+"attention.output.dense", att)
		x = t.Module(p+"attention.output.dropout", x)
		attOut := t.Module(p+"attention.output.LayerNorm", t.Fn("add", x, hidden))
		x = t.Module(p+"intermediate.dense", attOut)
		x = t.Module(p+"intermediate.intermediate_act_fn", x)
		x = t.Module(p+"output.dense", x)
		x = t.Module(p+"output.dropout", x)
		hidden = t.Module(p+"output.LayerNorm", t.Fn("add", x, attOut))
	}
	first := t.Fn("getitem", hidden, []any{ir.Slice{}, 0})
	pooled := t.Module("bert.pooler.activation", t.Module("bert.pooler.dense", first))
	logits := t.Module("classifier", t.Module("dropout", pooled))

	if labels := in["labels"]; labels != nil {
		loss := t.NewModule(&nn.CrossEntropyLoss{},
			t.Method("view", logits, -1, cfg.NumLabels), t.Method("view", labels, -1))
		t.Output(loss, logits)
		return nil
	}
	t.Output(logits)
	return nil
}
