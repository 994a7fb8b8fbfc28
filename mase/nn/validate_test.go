package nn

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecodeModuleValidates: a replaced module's configuration read from a
// file is refused, naming the field and what is allowed, before any
// parameter is created.
func TestDecodeModuleValidates(t *testing.T) {
	for _, c := range []struct {
		kind, config, want string
	}{
		{"Linear", `{"InFeatures":4,"OutFeatures":8,"Bias":true}`, ""},
		{"Linear", `{"InFeatures":1000000000000,"OutFeatures":8,"Bias":true}`, "Linear: in_features 1000000000000 is out of range (allowed: 1 to 2097152)"},
		{"Linear", `{"InFeatures":4,"OutFeatures":0}`, "Linear: out_features 0 is out of range"},
		{"Embedding", `{"NumEmbeddings":10,"EmbeddingDim":4,"PaddingIdx":-1}`, ""},
		{"Embedding", `{"NumEmbeddings":10,"EmbeddingDim":4,"PaddingIdx":10}`, "Embedding: padding_idx 10 is out of range (allowed: -1 for none, or 0 to 9)"},
		{"Embedding", `{"NumEmbeddings":10,"EmbeddingDim":-4,"PaddingIdx":0}`, "Embedding: embedding_dim -4 is out of range"},
		{"LayerNorm", `{"Dim":16,"Eps":1e-12}`, ""},
		{"LayerNorm", `{"Dim":16,"Eps":0}`, "LayerNorm: eps 0 is out of range (allowed: a finite number above 0)"},
		{"Dropout", `{"P":0.1}`, ""},
		{"Dropout", `{"P":5}`, "Dropout: p 5 is not a dropout probability (allowed: 0 ≤ p < 1)"},
		{"Dropout", `{"P":-0.5}`, "Dropout: p -0.5 is not a dropout probability"},
		{"LoRALinear", `{"InFeatures":4,"OutFeatures":8,"Bias":true,"Rank":2,"Alpha":4,"Dropout":0}`, ""},
		{"LoRALinear", `{"InFeatures":4,"OutFeatures":8,"Rank":0,"Alpha":4}`, "LoRALinear: rank 0 is out of range"},
		{"LoRALinear", `{"InFeatures":4,"OutFeatures":8,"Rank":2,"Alpha":4,"Dropout":1}`, "LoRALinear: dropout 1 is not a dropout probability"},
	} {
		_, err := DecodeModule(c.kind, json.RawMessage(c.config))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("DecodeModule(%s, %s) = %v, want %q", c.kind, c.config, err, c.want)
		}
	}
}
