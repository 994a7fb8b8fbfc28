package quant

import (
	"fmt"
	"math/rand/v2"
)

// Reference quantises x, a tensor of the given shape in row-major order
// (nil shape: one axis of len(x)), with the exact float64 reference of the
// spec's format: the value MASE's quantiser intends, with round half to
// even. The spec must be valid and the values finite. Block formats block
// along the shape (BlockShape); binary (non-bipolar) and ternary take
// their statistics per first-axis slice; mxint8 groups consecutive values
// and needs len(x) divisible by group_size. Stochastic binary draws its
// uniforms from a PCG generator seeded with Seed, in element order.
func (s Spec) Reference(x []float64, shape []int) ([]float64, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if shape == nil {
		shape = []int{len(x)}
	}
	n, err := numel(shape)
	if err != nil {
		return nil, err
	}
	if n != len(x) {
		return nil, fmt.Errorf("shape %v holds %d values, got %d (allowed: a shape whose product is the number of values)", shape, n, len(x))
	}
	if err := checkFinite(x); err != nil {
		return nil, err
	}
	each := func(f func(float64) float64) []float64 {
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = f(v)
		}
		return out
	}
	switch s.canonical() {
	case Integer:
		if s.Floor {
			return each(func(v float64) float64 { return QuantizeIntegerFloor(v, s.Width, s.FracWidth) }), nil
		}
		return each(func(v float64) float64 { return QuantizeInteger(v, s.Width, s.FracWidth) }), nil
	case MinifloatIEEE:
		return each(func(v float64) float64 { return QuantizeMinifloatIEEE(v, s.Width, s.ExponentWidth, s.bias()) }), nil
	case MinifloatDenorm:
		return each(func(v float64) float64 { return QuantizeMinifloatDenorm(v, s.Width, s.ExponentWidth, s.bias()) }), nil
	case Log:
		return each(func(v float64) float64 { return QuantizeLog(v, s.Width, s.bias()) }), nil
	case BlockFP:
		return QuantizeBlockFP(x, shape, s.Width, s.ExponentWidth, s.bias(), s.BlockSize, s.SkipFirstDim), nil
	case BlockMinifloat:
		return QuantizeBlockMinifloat(x, shape, s.Width, s.ExponentWidth, s.ExponentBiasWidth, s.BlockSize, s.SkipFirstDim), nil
	case BlockLog:
		return QuantizeBlockLog(x, shape, s.Width, s.ExponentBiasWidth, s.BlockSize, s.SkipFirstDim), nil
	case Binary:
		switch {
		case s.Stochastic:
			return QuantizeBinaryStochastic(x, Uniforms(s.Seed, len(x)), shape, s.Bipolar), nil
		case s.Bipolar:
			return each(QuantizeBinaryBipolar), nil
		}
		return QuantizeBinaryZeroScaled(x, shape), nil
	case BinaryResidual:
		means := s.means()
		return each(func(v float64) float64 { return QuantizeResidualSign(v, means) }), nil
	case Ternary:
		return QuantizeTernary(x, shape, s.ScalingFactor), nil
	case MXInt8:
		return QuantizeMXInt8(x, s.GroupSize)
	}
	return nil, fmt.Errorf("format %q has no reference quantiser", s.Format) // unreachable after Validate
}

// Uniforms returns n values in [0, 1) from a PCG generator seeded with
// seed: the draws Reference uses for stochastic binary.
func Uniforms(seed uint64, n int) []float64 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	u := make([]float64, n)
	for i := range u {
		u[i] = rng.Float64()
	}
	return u
}
