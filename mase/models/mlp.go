package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// MLP is the hardware lab's toy model: flatten → fc1 = Linear(4, 8) → relu
// (or, with MLPOptions, leaky_relu: the lab's extension task).
type MLP struct {
	nn.Container
	// Options picks the activation.
	Options MLPOptions
}

// Activations of the MLP (MLPOptions.Activation).
const (
	ActivationReLU      = "relu"
	ActivationLeakyReLU = "leaky_relu"
)

// MLPOptions are the MLP's variants. The zero value is the lab's model.
type MLPOptions struct {
	// Activation is "relu" (F.relu; "" means relu) or "leaky_relu"
	// (F.leaky_relu).
	Activation string `json:"activation,omitempty"`
	// NegativeSlope is leaky_relu's negative_slope; 0 means torch's default
	// 0.01 (a zero slope is relu: ask for that instead). Only with
	// leaky_relu.
	NegativeSlope float64 `json:"negative_slope,omitempty"`
}

// normalized fills the defaults and checks the options.
func (o MLPOptions) normalized() (MLPOptions, error) {
	switch o.Activation {
	case "", ActivationReLU:
		if o.NegativeSlope != 0 {
			return o, fmt.Errorf("MLP: negative_slope %v needs activation %s (activation is relu)", o.NegativeSlope, ActivationLeakyReLU)
		}
		o.Activation = ActivationReLU
	case ActivationLeakyReLU:
		if o.NegativeSlope == 0 {
			o.NegativeSlope = nn.DefaultNegativeSlope
		}
		if math.IsNaN(o.NegativeSlope) || math.IsInf(o.NegativeSlope, 0) {
			return o, fmt.Errorf("MLP: negative_slope %v is not a finite number", o.NegativeSlope)
		}
	default:
		return o, fmt.Errorf("MLP: unknown activation %q (allowed: %s, %s)", o.Activation, ActivationReLU, ActivationLeakyReLU)
	}
	return o, nil
}

// NewMLP builds the hardware lab's MLP with PyTorch's default
// initialisation, seeded.
func NewMLP(seed uint64) (*nn.Model, error) { return NewMLPWith(seed, MLPOptions{}) }

// NewMLPWith builds the MLP with another activation: MLPOptions{Activation:
// "leaky_relu", NegativeSlope: 0.01} traces F.leaky_relu(fc1(x),
// negative_slope=0.01, inplace=False) in place of F.relu. The parameters
// (and their seeded values) are the same as NewMLP's.
func NewMLPWith(seed uint64, opts MLPOptions) (*nn.Model, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	root := &MLP{Container: nn.Container{Type: "MLP", Kids: []nn.Named{{Name: "fc1", Module: nn.NewLinear(4, 8, true)}}}, Options: opts}
	return nn.NewModel(root, seed)
}

// InputNames implements trace.Forwarder.
func (m *MLP) InputNames() []string { return []string{"x"} }

// DefaultInputs implements trace.Forwarder.
func (m *MLP) DefaultInputs() []string { return []string{"x"} }

// Forward implements trace.Forwarder:
// torch.flatten(x, start_dim=1, end_dim=-1), then F.relu(fc1(x), inplace=False)
// (or F.leaky_relu(fc1(x), negative_slope=s, inplace=False)).
func (m *MLP) Forward(t *trace.Tracer, in map[string]*ir.Node) error {
	x := in["x"]
	if x == nil {
		return fmt.Errorf("MLP needs input x")
	}
	opts, err := m.Options.normalized()
	if err != nil {
		return err
	}
	flat := t.FnKw("flatten", []any{x}, map[string]any{"start_dim": 1, "end_dim": -1})
	h := t.Module("fc1", flat)
	if opts.Activation == ActivationLeakyReLU {
		t.Output(t.FnKw("leaky_relu", []any{h}, map[string]any{"negative_slope": opts.NegativeSlope, "inplace": false}))
		return nil
	}
	t.Output(t.FnKw("relu", []any{h}, map[string]any{"inplace": false}))
	return nil
}

// Names lists the models New can build.
func Names() []string { return []string{"bert-tiny", "mlp", "resnet18"} }

// ConfigOf returns the JSON configuration of a registry model whose root
// carries one (BertForSequenceClassification: its BertConfig; ResNet: its
// ResNetConfig; an MLP other than the lab's relu one: its MLPOptions), so that NewFromConfig rebuilds the same module tree (a
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
	case *MLP:
		opts, err := root.Options.normalized()
		if err != nil || opts.Activation == ActivationReLU {
			return nil, false
		}
		js, err := json.Marshal(opts)
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
		var opts MLPOptions
		dec := json.NewDecoder(bytes.NewReader(config))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&opts); err != nil {
			return nil, fmt.Errorf("model %s: config %s: %w", name, config, err)
		}
		return NewMLPWith(seed, opts)
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
