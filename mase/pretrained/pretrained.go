// Package pretrained loads HuggingFace BERT checkpoints the way
// transformers' from_pretrained does: a repository id ("prajjwal1/bert-tiny")
// or a local folder, its config.json, its weights (model.safetensors or
// pytorch_model.bin, sharded or not) and its tokenizer, found in a folder,
// the HuggingFace cache or the hub (package hub).
package pretrained

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/download"
	"github.com/gomase/gomase/mase/hub"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/safetensors"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/torchbin"
)

// LabsModel is the model every MASE lab starts from.
const LabsModel = "prajjwal1/bert-tiny"

// Options configure Load.
type Options struct {
	// Hub says where files come from (folder, cache, download).
	Hub hub.Options
	// NumLabels is the classifier's size; 0 takes the config's (id2label,
	// else num_labels, else 2), as HF does.
	NumLabels int
	// Seed initialises what the checkpoint lacks (a new classifier head).
	Seed uint64
}

// Model is a loaded checkpoint.
type Model struct {
	// Model is the BertForSequenceClassification with the checkpoint's
	// weights.
	Model *nn.Model
	// Config is the model's configuration, from config.json.
	Config models.BertConfig
	// ID is the repository id or folder Load was given; Weights the file
	// (or the index of the shards) the weights came from.
	ID, Weights string
	// Labels are the config's id2label names by class index (nil if none).
	Labels []string
	// Tokenizer is the repository's WordPiece tokenizer (vocab.txt or
	// tokenizer.json); nil when it has none that gomase can use, and
	// TokenizerNote says why.
	Tokenizer     *tokenizer.Tokenizer
	TokenizerNote string
	// Report says which parameters were loaded, missing or unused.
	Report *checkpoint.LoadReport
}

// Warnings are transformers' warnings about the load: checkpoint weights
// not used, model weights newly initialised.
func (m *Model) Warnings() []string {
	return m.Report.WarningsFor(m.ID, "BertForSequenceClassification")
}

// hfConfig is the part of a transformers config.json that Load reads.
type hfConfig struct {
	models.BertConfig
	ModelType             string            `json:"model_type"`
	Architectures         []string          `json:"architectures"`
	HiddenAct             string            `json:"hidden_act"`
	PositionEmbeddingType string            `json:"position_embedding_type"`
	ID2Label              map[string]string `json:"id2label"`
	NumLabelsField        *int              `json:"num_labels"`
}

// ParseConfig reads a BERT config.json: transformers' BertConfig defaults
// for absent fields, and an error naming the field for an architecture
// gomase cannot build.
func ParseConfig(raw []byte, numLabels int) (models.BertConfig, []string, error) {
	c := hfConfig{BertConfig: models.BertConfig{
		VocabSize: 30522, HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, IntermediateSize: 3072,
		HiddenDropoutProb: 0.1, AttentionProbsDropoutProb: 0.1, MaxPositionEmbeddings: 512, TypeVocabSize: 2,
		InitializerRange: 0.02, LayerNormEps: 1e-12,
	}}
	if err := json.Unmarshal(raw, &c); err != nil {
		return models.BertConfig{}, nil, fmt.Errorf("config.json is not a transformers config: %v", err)
	}
	bert := c.ModelType == "bert"
	if c.ModelType == "" {
		for _, a := range c.Architectures {
			bert = bert || strings.HasPrefix(a, "Bert")
		}
	}
	if !bert {
		what := c.ModelType
		if what == "" {
			what = "none given"
		}
		return models.BertConfig{}, nil, fmt.Errorf("config.json: model_type %q is not supported: gomase loads BERT checkpoints (model_type \"bert\")", what)
	}
	if act := strings.ToLower(c.HiddenAct); act != "" && act != "gelu" {
		return models.BertConfig{}, nil, fmt.Errorf("config.json: hidden_act %q is not supported (allowed: gelu)", c.HiddenAct)
	}
	if p := c.PositionEmbeddingType; p != "" && p != "absolute" {
		return models.BertConfig{}, nil, fmt.Errorf("config.json: position_embedding_type %q is not supported (allowed: absolute)", p)
	}
	var labels []string
	if len(c.ID2Label) > 0 {
		labels = make([]string, len(c.ID2Label))
		for k, v := range c.ID2Label {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(labels) {
				return models.BertConfig{}, nil, fmt.Errorf("config.json: id2label key %q is not a class index in [0, %d)", k, len(labels))
			}
			labels[i] = v
		}
	}
	cfg := c.BertConfig
	switch {
	case numLabels > 0:
		cfg.NumLabels = numLabels
		if len(labels) != numLabels {
			labels = nil
		}
	case labels != nil:
		cfg.NumLabels = len(labels)
	case c.NumLabelsField != nil:
		cfg.NumLabels = *c.NumLabelsField
	default:
		cfg.NumLabels = 2
	}
	if err := cfg.Validate(); err != nil {
		return models.BertConfig{}, nil, fmt.Errorf("config.json: %w", err)
	}
	return cfg, labels, nil
}

// weightFiles are the weight files Load looks for, in transformers' order.
var weightFiles = []string{"model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json"}

// Load builds the BertForSequenceClassification of repository (or folder)
// id with its pretrained weights. A classifier head the checkpoint lacks
// is initialised from Seed and named in Warnings, as transformers does.
// Nothing is half-loaded: on error no model is returned.
func Load(id string, opts Options) (*Model, error) {
	return LoadContext(context.Background(), id, opts)
}

// LoadContext is Load with a context: cancelling it stops a download and
// removes what it had written.
func LoadContext(ctx context.Context, id string, opts Options) (*Model, error) {
	cfgPath, err := hub.ResolveContext(ctx, id, "config.json", opts.Hub)
	if err != nil {
		return nil, err
	}
	raw, err := readChecked(cfgPath, download.JSON, limits.JSONConfig)
	if err != nil {
		return nil, err
	}
	cfg, labels, err := ParseConfig(raw, opts.NumLabels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	state, weights, err := loadWeights(ctx, id, opts.Hub)
	if err != nil {
		return nil, err
	}
	model, err := models.NewBertForSequenceClassification(cfg, opts.Seed)
	if err != nil {
		return nil, err
	}
	report, err := checkpoint.LoadState(state, model, checkpoint.LoadOptions{AllowMissing: true, AllowUnexpected: true})
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", id, weights, err)
	}
	if !loadedEncoder(report.Loaded) {
		return nil, fmt.Errorf("%s (%s): no BERT weight matched the model (checkpoint tensors such as %s): not a BERT checkpoint", id, weights, firstNames(state.Names(), 3))
	}
	m := &Model{Model: model, Config: cfg, ID: id, Weights: weights, Labels: labels, Report: report}
	m.Tokenizer, m.TokenizerNote = loadTokenizer(ctx, id, opts.Hub)
	return m, nil
}

// readChecked reads a file Resolve returned and checks it is JSON or text
// as c says; a file that is not is named with how to clear it from the
// cache (hub.BadFile).
func readChecked(path string, c download.Content, limit limits.File) ([]byte, error) {
	raw, err := limits.ReadFile(path, limit)
	if err != nil {
		return nil, err
	}
	if err := download.CheckBytes(raw, c); err != nil {
		return nil, hub.BadFile(path, err)
	}
	return raw, nil
}

// loadedEncoder reports whether the encoder's weights came from the
// checkpoint (a head alone does not make a pretrained model).
func loadedEncoder(loaded []string) bool {
	for _, n := range loaded {
		if strings.HasPrefix(n, "bert.encoder.") {
			return true
		}
	}
	return false
}

func firstNames(names []string, n int) string {
	if len(names) > n {
		names = append(names[:n:n], "...")
	}
	return strings.Join(names, ", ")
}

// loadWeights finds and reads the first weight file the repository has.
func loadWeights(ctx context.Context, id string, ho hub.Options) (*safetensors.File, string, error) {
	for _, name := range weightFiles {
		path, ok, err := hub.ResolveOptionalContext(ctx, id, name, ho)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		if strings.HasSuffix(name, ".index.json") {
			f, err := loadShards(ctx, id, path, ho)
			return f, name, err
		}
		f, err := readWeights(path)
		return f, name, err
	}
	return nil, "", fmt.Errorf("%s has no weights: none of %s", id, strings.Join(weightFiles, ", "))
}

// readWeights reads a safetensors or torch.save file by its name.
func readWeights(path string) (*safetensors.File, error) {
	if strings.HasSuffix(path, ".safetensors") {
		return safetensors.ReadFile(path)
	}
	return torchbin.ReadFile(path)
}

// loadShards reads the shards an index file names and merges them.
func loadShards(ctx context.Context, id, indexPath string, ho hub.Options) (*safetensors.File, error) {
	raw, err := readChecked(indexPath, download.JSON, limits.JSONConfig)
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil || len(index.WeightMap) == 0 {
		return nil, fmt.Errorf("%s: %s is not a shard index (a JSON object with a weight_map)", id, indexPath)
	}
	shards := map[string]bool{}
	for _, s := range index.WeightMap {
		if s == "" || strings.Contains(s, "..") || strings.HasPrefix(s, "/") {
			return nil, fmt.Errorf("%s: the shard index names %q, not a file of the repository", id, s)
		}
		shards[s] = true
	}
	names := make([]string, 0, len(shards))
	for s := range shards {
		names = append(names, s)
	}
	sort.Strings(names)
	merged := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}
	for _, s := range names {
		path, err := hub.ResolveContext(ctx, id, s, ho)
		if err != nil {
			return nil, err
		}
		f, err := readWeights(path)
		if err != nil {
			return nil, err
		}
		for name, t := range f.Tensors {
			if shard, ok := index.WeightMap[name]; ok && shard != s {
				continue // the index puts this tensor in another shard
			}
			merged.Tensors[name] = t
		}
	}
	for name, shard := range index.WeightMap {
		if _, ok := merged.Tensors[name]; !ok {
			return nil, fmt.Errorf("%s: the shard index puts %s in %s, which does not hold it", id, name, shard)
		}
	}
	return merged, nil
}

// loadTokenizer reads the repository's vocab.txt, else the WordPiece
// vocabulary of its tokenizer.json; uncased tokenizers only.
func loadTokenizer(ctx context.Context, id string, ho hub.Options) (*tokenizer.Tokenizer, string) {
	path, ok, err := hub.ResolveOptionalContext(ctx, id, "tokenizer_config.json", ho)
	if err != nil {
		return nil, err.Error()
	}
	if ok {
		var tc struct {
			DoLowerCase *bool `json:"do_lower_case"`
		}
		raw, err := readChecked(path, download.JSON, limits.JSONConfig)
		if err != nil {
			return nil, err.Error()
		}
		if err := json.Unmarshal(raw, &tc); err != nil {
			return nil, fmt.Sprintf("%s: %v", path, err)
		}
		if tc.DoLowerCase != nil && !*tc.DoLowerCase {
			return nil, "the repository's tokenizer is cased (do_lower_case false); gomase's tokenizer is uncased"
		}
	}
	path, ok, err = hub.ResolveOptionalContext(ctx, id, "vocab.txt", ho)
	if err != nil {
		return nil, err.Error()
	}
	var v *tokenizer.Vocab
	if ok {
		raw, err := readChecked(path, download.Text, limits.Tokenizer)
		if err != nil {
			return nil, err.Error()
		}
		if v, err = tokenizer.ParseVocab(bytes.NewReader(raw)); err != nil {
			return nil, fmt.Sprintf("vocabulary %s: %v", path, err)
		}
	} else {
		path, ok, err = hub.ResolveOptionalContext(ctx, id, "tokenizer.json", ho)
		if err != nil {
			return nil, err.Error()
		}
		if !ok {
			return nil, "the repository has no vocab.txt or tokenizer.json"
		}
		if v, err = vocabFromTokenizerJSON(path); err != nil {
			return nil, err.Error()
		}
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		return nil, err.Error()
	}
	return tok, ""
}

// vocabFromTokenizerJSON reads the WordPiece vocabulary of a tokenizers
// tokenizer.json.
func vocabFromTokenizerJSON(path string) (*tokenizer.Vocab, error) {
	raw, err := readChecked(path, download.JSON, limits.Tokenizer)
	if err != nil {
		return nil, err
	}
	var tj struct {
		Model struct {
			Type  string         `json:"type"`
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if tj.Model.Type != "WordPiece" || len(tj.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%s: a %q tokenizer model, want WordPiece with a vocabulary", path, tj.Model.Type)
	}
	tokens := make([]string, len(tj.Model.Vocab))
	for tok, id := range tj.Model.Vocab {
		if id < 0 || id >= len(tokens) || tokens[id] != "" {
			return nil, fmt.Errorf("%s: token ids are not 0..%d, each once", path, len(tokens)-1)
		}
		if strings.ContainsAny(tok, "\n\r") {
			return nil, fmt.Errorf("%s: a token holds a line break", path)
		}
		tokens[id] = tok
	}
	return tokenizer.ParseVocab(strings.NewReader(strings.Join(tokens, "\n") + "\n"))
}
