package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// MLP is the hardware lab's toy model: flatten → fc1 = Linear(4, 8) → relu.
type MLP struct {
	nn.Container
}

// NewMLP builds the hardware lab's MLP with PyTorch's default
// initialisation, seeded.
func NewMLP(seed uint64) (*nn.Model, error) {
	root := &MLP{Container: nn.Container{Type: "MLP", Kids: []nn.Named{{Name: "fc1", Module: nn.NewLinear(4, 8, true)}}}}
	return nn.NewModel(root, seed)
}

// InputNames implements trace.Forwarder.
func (m *MLP) InputNames() []string { return []string{"x"} }

// DefaultInputs implements trace.Forwarder.
func (m *MLP) DefaultInputs() []string { return []string{"x"} }

// Forward implements trace.Forwarder:
// torch.flatten(x, start_dim=1, end_dim=-1), then F.relu(fc1(x), inplace=False).
func (m *MLP) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	x := in["x"]
	if x == nil {
		return fmt.Errorf("MLP needs input x")
	}
	flat := t.FnKw("flatten", []any{x}, map[string]any{"start_dim": 1, "end_dim": -1})
	t.Output(t.FnKw("relu", []any{t.Module("fc1", flat)}, map[string]any{"inplace": false}))
	return nil
}

// Names lists the models New can build.
func Names() []string { return []string{"bert-tiny", "mlp", "resnet18"} }

// ConfigOf returns the JSON configuration of a registry model whose root
// carries one (BertForSequenceClassification: its BertConfig; ResNet: its
// ResNetConfig), so that NewFromConfig rebuilds the same module tree (a
// NAS model with other sizes or layer counts, a classifier with more
// labels).
func ConfigOf(m *nn.Model) (json.RawMessage, bool) {
	switch root := m.Root.(type) {
	case *BertForSequenceClassification:
		js, err := json.Marshal(root.Config)
		return js, err == nil
	case *ResNet:
		js, err := json.Marshal(root.Config)
		return js, err == nil
	}
	return nil, false
}

// NewFromConfig builds registry model name with a configuration from
// ConfigOf (nil: the default, as New). Unknown or badly typed fields are
// errors.
func NewFromConfig(name string, config json.RawMessage, seed uint64) (*nn.Model, error) {
	if len(config) == 0 {
		return New(name, seed)
	}
	switch name {
	case "bert-tiny":
		cfg := BertTinyConfig()
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("model %s: config %s: %w", name, config, err)
		}
		return NewBertForSequenceClassification(cfg, seed)
	case "mlp":
		return nil, fmt.Errorf("model mlp takes no config (got %s)", config)
	case "resnet18":
		cfg := ResNet18Config()
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("model %s: config %s: %w", name, config, err)
		}
		return NewResNet(cfg, seed)
	}
	return nil, unknownModel(name)
}

// unknownModel is New's error for a name it does not know.
func unknownModel(name string) error {
	return fmt.Errorf("unknown model %q (allowed: %s)", name, strings.Join(Names(), ", "))
}

// New builds a model by name (see Names), seeded.
func New(name string, seed uint64) (*nn.Model, error) {
	switch name {
	case "bert-tiny":
		return NewBertTiny(seed)
	case "mlp":
		return NewMLP(seed)
	case "resnet18":
		return NewResNet18(1000, seed)
	}
	return nil, unknownModel(name)
}
