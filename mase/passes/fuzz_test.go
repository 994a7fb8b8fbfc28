package passes_test

import (
	"reflect"
	"testing"

	"github.com/gomase/gomase/mase/passes"
)

// FuzzQuantizeArgsFromJSON: any input either decodes into valid args that
// clone equal, or is an error; it never panics.
func FuzzQuantizeArgsFromJSON(f *testing.F) {
	for _, s := range []string{
		`{"by": "type", "default": {"config": {"name": null}}, "linear": {"config": {"name": "integer", "data_in_width": 8}}}`,
		`{"by": "regex_name", "bert_.*": {"config": {"name": "log", "weight_width": 4}}}`,
		`{"by": "name", "classifier": {"config": null}}`,
		`{"by": 3}`, `[]`, `{"by": "type", "linear": 1}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := passes.QuantizeArgsFromJSON(data)
		if err != nil {
			return
		}
		if err := args.Validate(); err != nil {
			t.Fatalf("decoded args do not validate: %v", err)
		}
		if c := args.Clone(); !reflect.DeepEqual(c, args) {
			t.Fatalf("clone differs: %+v vs %+v", c, args)
		}
	})
}

// FuzzPruneArgsFromJSON: decoding never panics, and decoded sparsities lie
// in [0, 1].
func FuzzPruneArgsFromJSON(f *testing.F) {
	for _, s := range []string{
		`{"weight": {"sparsity": 0.5, "method": "l1-norm", "scope": "local"}, "activation": {"sparsity": 0.5, "method": "l1-norm", "scope": "local"}}`,
		`{"weight": {"sparsity": 1}}`, `{"weight": {"sparsity": 0.3, "method": "l1"}}`, `{"weight": {"sparsity": {"a": 0.2}, "scope": "global"}}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := passes.PruneArgsFromJSON(data)
		if err != nil {
			return
		}
		for _, c := range []*passes.PruneConfig{args.Weight, args.Activation} {
			if c != nil && (c.Sparsity < 0 || c.Sparsity > 1) {
				t.Fatalf("sparsity %v accepted", c.Sparsity)
			}
		}
	})
}
