// Package modeltest holds helpers for tests that run the library's models.
package modeltest

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/nn"
)

// RandomLinearBiases gives every nn.Linear of m biases drawn from
// N(0, 0.05²) with rng (they start at zero, which would hide a dropped
// bias).
func RandomLinearBiases(t testing.TB, m *nn.Model, rng *rand.Rand) {
	t.Helper()
	for _, nm := range m.Modules() {
		if _, ok := nm.Module.(*nn.Linear); !ok {
			continue
		}
		name := nn.Join(nm.Path, "bias")
		vals, shape, err := m.ParamValues(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * 0.05)
		}
		if err := m.Store.GetVariable(nn.StorePath(name)).SetValue(tensors.FromFlatDataAndDimensions(vals, shape...)); err != nil {
			t.Fatal(err)
		}
	}
}
