package nn

import (
	"testing"

	"github.com/gomlx/gomlx/core/graph"
)

func TestForwardSignature(t *testing.T) {
	sig := func(m Module) string {
		t.Helper()
		s, ok := ForwardSignature(m)
		if !ok {
			t.Fatalf("%s: no signature", m.TypeName())
		}
		return s
	}
	a, b := NewLinear(4, 8, true), NewLinear(4, 8, true)
	b.WeightInit = Zeros // initialisers do not change what Forward computes
	if sig(a) != sig(b) {
		t.Errorf("equal Linears differ: %s, %s", sig(a), sig(b))
	}
	for _, other := range []Module{NewLinear(4, 8, false), NewLinear(8, 4, true), &LoRALinear{InFeatures: 4, OutFeatures: 8, Bias: true}} {
		if sig(other) == sig(a) {
			t.Errorf("%s %s has the signature of Linear(4, 8)", other.TypeName(), other.ExtraRepr())
		}
	}
	if sig(NewGELU("GELU")) == sig(NewReLU()) || sig(NewSoftmax(1)) == sig(NewSoftmax(-1)) || sig(NewGELU("GELU")) != sig(NewGELU("GELU")) {
		t.Error("activation signatures do not tell the activations apart")
	}
	if sig(&LayerNorm{Dim: 8, Eps: 1e-5}) == sig(&LayerNorm{Dim: 8, Eps: 1e-12}) {
		t.Error("LayerNorm eps left out")
	}
	if _, ok := ForwardSignature(&funcModule{fn: graph.Neg}); ok {
		t.Error("a module holding a function got a signature")
	}
}

// funcModule holds a function that is not an initialiser.
type funcModule struct {
	noChildren
	fn func(*graph.Node) *graph.Node
}

func (*funcModule) TypeName() string    { return "F" }
func (*funcModule) ExtraRepr() string   { return "" }
func (*funcModule) Params() []ParamSpec { return nil }
