package quant_test

import (
	"slices"
	"testing"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase/quant"
)

// The quantisation specs accept exactly the group sizes the MXINT8 kernel
// supports.
func TestMXInt8GroupSizesMatchKernel(t *testing.T) {
	if !slices.Equal(quant.MXInt8GroupSizes, mxint8.GroupSizes) {
		t.Errorf("quant.MXInt8GroupSizes %v, mxint8.GroupSizes %v", quant.MXInt8GroupSizes, mxint8.GroupSizes)
	}
}
