package execute

import (
	"testing"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// TracedBertTiny returns bert-tiny (seed 1) and its trace with the given
// inputs, for the tests of this package and of execute_test.
func TracedBertTiny(tb testing.TB, inputs ...string) (*nn.Model, *ir.Graph) {
	tb.Helper()
	m, err := models.NewBertTiny(1)
	if err != nil {
		tb.Fatal(err)
	}
	g, err := trace.Trace(m, inputs)
	if err != nil {
		tb.Fatal(err)
	}
	return m, g
}
