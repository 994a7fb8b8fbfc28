package nn

import (
	"math"
	"testing"
)

func TestLeakyReLUModule(t *testing.T) {
	l := NewLeakyReLU(0.2)
	if l.TypeName() != "LeakyReLU" || l.ExtraRepr() != "negative_slope=0.2" {
		t.Errorf("printout %s(%s)", l.TypeName(), l.ExtraRepr())
	}
	kind, cfg, err := EncodeModule(l)
	if err != nil || kind != "LeakyReLU" || string(cfg) != `{"negative_slope":0.2}` {
		t.Fatalf("EncodeModule = %s %s %v", kind, cfg, err)
	}
	back, err := DecodeModule(kind, cfg)
	if err != nil || back.(*LeakyReLU).NegativeSlope != 0.2 {
		t.Errorf("DecodeModule = %v, %v", back, err)
	}
	if err := (&LeakyReLU{NegativeSlope: math.NaN()}).Validate(); err == nil {
		t.Error("NaN slope accepted")
	}
}
