package nn

import (
	"strings"
	"testing"
)

func TestModuleKindsRoundTrip(t *testing.T) {
	lora, err := NewLoRALinear(16, 8, true, 4, 8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []Module{NewLinear(3, 5, false), lora, NewIdentity(), NewReLU(), &Dropout{P: 0.25}, &LayerNorm{Dim: 4, Eps: 1e-12}} {
		kind, cfg, err := EncodeModule(mod)
		if err != nil {
			t.Fatalf("%s: %v", mod.TypeName(), err)
		}
		back, err := DecodeModule(kind, cfg)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if back.TypeName() != mod.TypeName() || back.ExtraRepr() != mod.ExtraRepr() {
			t.Errorf("%s came back as %s(%s), want %s(%s)", kind, back.TypeName(), back.ExtraRepr(), mod.TypeName(), mod.ExtraRepr())
		}
	}
}

func TestModuleKindErrors(t *testing.T) {
	if _, _, err := EncodeModule(&Container{Type: "Block", Kids: []Named{{"fc", NewLinear(1, 1, true)}}}); err == nil ||
		!strings.Contains(err.Error(), "cannot be saved: registered kinds are") {
		t.Errorf("container: %v", err)
	}
	if _, err := DecodeModule("Conv9d", nil); err == nil || !strings.Contains(err.Error(), `unknown module kind "Conv9d" (allowed: `) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := DecodeModule("Linear", []byte(`{"InFeatures":2,"Rank":3}`)); err == nil || !strings.Contains(err.Error(), `unknown field "Rank"`) {
		t.Errorf("unknown field: %v", err)
	}
}
