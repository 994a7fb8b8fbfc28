package packed

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/nn"
)

// TestSignatureHasGroupSize: two packed Linears differing only in their
// group size compute different things, so their signatures differ.
func TestSignatureHasGroupSize(t *testing.T) {
	s, ok := nn.ForwardSignature(&Linear{InFeatures: 4, OutFeatures: 8, GroupSize: 32})
	if !ok || !strings.Contains(s, "GroupSize:32") {
		t.Errorf("packed Linear signature %q (ok %v) lacks its group size", s, ok)
	}
}

// TestKindsRoundTrip: the packed modules keep MASE's class names as their
// checkpoint kinds and decode back from them.
func TestKindsRoundTrip(t *testing.T) {
	for _, m := range []nn.Module{&Linear{InFeatures: 4, OutFeatures: 8, Bias: true, GroupSize: 8},
		&Embedding{NumEmbeddings: 10, EmbeddingDim: 8, PaddingIdx: -1, GroupSize: 8}} {
		kind, cfg, err := nn.EncodeModule(m)
		if err != nil {
			t.Fatal(err)
		}
		if kind != m.TypeName() {
			t.Errorf("%T encodes as kind %q, want %q", m, kind, m.TypeName())
		}
		back, err := nn.DecodeModule(kind, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if back.ExtraRepr() != m.ExtraRepr() {
			t.Errorf("%s decodes as %s", m.ExtraRepr(), back.ExtraRepr())
		}
	}
}
