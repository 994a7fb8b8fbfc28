package mxint8

import (
	"fmt"

	"github.com/gomlx/compute/dtypes/bfloat16"
)

// DequantizeWords decodes a packed parameter as a packed module stores it
// (see mase/nn/packed's Set: int32 words of 4 mantissas and of 4 exponents; n values
// in groups of groupSize) to float32 with the fast kernel (Dequantize),
// then widens each bfloat16 exactly. It is the host side of the modules'
// graph op, for compiled graphs on the Go backend that run the
// dequantisation as a graph break (mase/compileopt's mxint8_kernel), and
// is bit-exact with it.
func DequantizeWords(mantissaWords, exponentWords []int32, n, groupSize int) ([]float32, error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("mxint8: %d values (allowed: at least one)", n)
	}
	groups := NumGroups(n, groupSize)
	if len(mantissaWords) != (n+3)/4 || len(exponentWords) != (groups+3)/4 {
		return nil, fmt.Errorf("mxint8: %d mantissa words and %d exponent words for %d values in groups of %d (allowed: exactly %d and %d)",
			len(mantissaWords), len(exponentWords), n, groupSize, (n+3)/4, (groups+3)/4)
	}
	p, err := NewPacked(Unwords[int8](mantissaWords, n), Unwords[uint8](exponentWords, groups), groupSize)
	if err != nil {
		return nil, err
	}
	bf := make([]bfloat16.BFloat16, n)
	dequantize(bf, p.mantissas, p.exponents, groupSize)
	out := make([]float32, n)
	for i, b := range bf {
		out[i] = b.Float32()
	}
	return out, nil
}
