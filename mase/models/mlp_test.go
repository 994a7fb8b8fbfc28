package models

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/trace"
)

func TestLeakyMLPTrace(t *testing.T) {
	m, err := NewMLPWith(1, MLPOptions{Activation: ActivationLeakyReLU})
	if err != nil {
		t.Fatal(err)
	}
	g, err := trace.Trace(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range g.Nodes() {
		names = append(names, n.Name)
	}
	if strings.Join(names, " ") != "x flatten fc1 leaky_relu output" {
		t.Errorf("nodes %v", names)
	}
	n := g.Node("leaky_relu")
	if s, _ := n.Kwarg("negative_slope"); s != 0.01 {
		t.Errorf("negative_slope %v, want torch's default 0.01", s)
	}
	// Same parameters as the relu MLP of the same seed.
	r, _ := NewMLP(1)
	a, _, _ := m.ParamValues("fc1.weight")
	b, _, _ := r.ParamValues("fc1.weight")
	if a[0] != b[0] || a[31] != b[31] {
		t.Error("leaky MLP has other weights than NewMLP")
	}
	// The options round-trip through ConfigOf/NewFromConfig (checkpoints).
	js, ok := ConfigOf(m)
	if !ok || string(js) != `{"activation":"leaky_relu","negative_slope":0.01}` {
		t.Fatalf("ConfigOf = %s, %v", js, ok)
	}
	back, err := NewFromConfig("mlp", js, 1)
	if err != nil || back.Root.(*MLP).Options != m.Root.(*MLP).Options {
		t.Errorf("NewFromConfig: %v", err)
	}
	for _, c := range []struct {
		opts MLPOptions
		want string
	}{
		{MLPOptions{Activation: "gelu"}, `unknown activation "gelu"`},
		{MLPOptions{NegativeSlope: 0.2}, "needs activation leaky_relu"},
	} {
		if _, err := NewMLPWith(1, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.opts, err)
		}
	}
	if _, err := NewFromConfig("mlp", []byte(`{"activaton":"relu"}`), 1); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("bad field: %v", err)
	}
}
