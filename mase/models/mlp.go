package models

import (
	"fmt"

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
func Names() []string { return []string{"bert-tiny", "mlp"} }

// New builds a model by name (see Names), seeded.
func New(name string, seed uint64) (*nn.Model, error) {
	switch name {
	case "bert-tiny":
		return NewBertTiny(seed)
	case "mlp":
		return NewMLP(seed)
	}
	return nil, fmt.Errorf("unknown model %q (allowed: bert-tiny, mlp)", name)
}
