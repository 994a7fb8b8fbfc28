package pretrained

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/limits"
)

// FuzzParseConfig: any config.json parses or fails with a one-line error;
// what parses is a config Validate accepts, within the size bounds and
// limits.MaxModelBytes, so nothing huge is built from it.
func FuzzParseConfig(f *testing.F) {
	f.Add(smallConfig(f, nil), 0)
	f.Add(smallConfig(f, map[string]string{"id2label": `{"0": "a", "1": "b"}`, "hidden_dropout_prob": "0.5"}), 0)
	f.Add(smallConfig(f, map[string]string{"hidden_size": "1000000000000"}), 2)
	f.Add(smallConfig(f, map[string]string{"layer_norm_eps": "-1", "num_labels": "-3"}), -1)
	f.Add([]byte(`{"architectures": ["BertForMaskedLM"]}`), 7)
	f.Fuzz(func(t *testing.T, raw []byte, numLabels int) {
		cfg, labels, err := ParseConfig(raw, numLabels)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseConfig returned a config Validate refuses: %v", err)
		}
		if b := 4 * cfg.NumParameters(); b <= 0 || b > limits.MaxModelBytes {
			t.Fatalf("ParseConfig returned a config of %d bytes", b)
		}
		if labels != nil && len(labels) != cfg.NumLabels {
			t.Fatalf("%d labels for num_labels %d", len(labels), cfg.NumLabels)
		}
	})
}
