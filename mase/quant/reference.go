package quant

import "math"

// This file holds the element-wise reference quantisers. They assume valid
// arguments (Spec.Validate checks them; Spec.Reference is the checked entry
// point) and compute exactly in float64.

// floorLog2 is ⌊log2 v⌋, exact, for finite v > 0.
func floorLog2(v float64) int {
	_, e := math.Frexp(v) // v = f·2^e with f in [0.5, 1)
	return e - 1
}

// ceilLog2 is ⌈log2 v⌉, exact, for finite v > 0.
func ceilLog2(v float64) int {
	f, e := math.Frexp(v)
	if f == 0.5 {
		return e - 1
	}
	return e
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

func clampF(v, lo, hi float64) float64 { return math.Min(math.Max(v, lo), hi) }

// integerCode is clamp(round|floor(x·2^frac), lo, hi): the integer a fixed
// point number stores.
func integerCode(x float64, width, fracWidth int, signed, floor bool) float64 {
	lo, hi := 0.0, math.Ldexp(1, width)-1
	if signed {
		lo, hi = -math.Ldexp(1, width-1), math.Ldexp(1, width-1)-1
	}
	v := math.Ldexp(x, fracWidth)
	if floor {
		v = math.Floor(v)
	} else {
		v = math.RoundToEven(v)
	}
	return clampF(v, lo, hi)
}

// QuantizeInteger is MASE's integer_quantizer (spec §6.1), signed, with
// round half to even: clamp(round(x·2^f), −2^(w−1), 2^(w−1)−1) / 2^f.
// It reads width and frac_width. The grid step is 2^−frac_width.
func QuantizeInteger(x float64, width, fracWidth int) float64 {
	return math.Ldexp(integerCode(x, width, fracWidth, true, false), -fracWidth)
}

// QuantizeIntegerFloor is integer_floor_quantizer: QuantizeInteger with
// floor in place of round.
func QuantizeIntegerFloor(x float64, width, fracWidth int) float64 {
	return math.Ldexp(integerCode(x, width, fracWidth, true, true), -fracWidth)
}

// QuantizeIntegerUnsigned is the unsigned variant (is_signed=False, used by
// MASE's integer ReLU): the code is clamped to [0, 2^width − 1].
func QuantizeIntegerUnsigned(x float64, width, fracWidth int, floor bool) float64 {
	return math.Ldexp(integerCode(x, width, fracWidth, false, floor), -fracWidth)
}

// IntegerHardware is the hardware encoding of a signed fixed-point value
// (integer_quantizer_for_hw / integer_floor_quantizer_for_hw): the code
// clamp(round|floor(x·2^f)) in width-bit two's complement, i.e. mod 2^width
// (floor(−2.4) = −3 at width 8 → 253 = 0xfd).
func IntegerHardware(x float64, width, fracWidth int, floor bool) uint64 {
	c := int64(integerCode(x, width, fracWidth, true, floor))
	return uint64(c) & (uint64(1)<<uint(width) - 1)
}

// signOf is MASE's sign(x + ε) for the float formats: +1 for x ≥ 0.
func signOf(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

// QuantizeMinifloatIEEE is minifloat_ieee_quantizer (spec §6.2): E =
// exponentWidth exponent bits with bias exponentBias, M = width − E − 1
// mantissa bits with an implicit leading 1, exponents clamped to
// [−bias, 2^E − 1 − bias] (the all-ones exponent is an ordinary value).
// The lowest exponent is MASE's subnormal binade: its values are
// 2^−bias·2k/2^M (step 2^(1−bias−M)), k < 2^M. The mantissa saturates
// inside its binade (no carry into the exponent: 1.99 → 1.875 at E4M3).
// |x| ≤ 1e-8 (torch.isclose(x, 0)) is returned unchanged.
//
// MASE computes the exponent as floor(log2(|x| + 1e-9)); the reference
// uses the exact floor(log2 |x|), which only differs for |x| within 1e-9
// below a power of two.
func QuantizeMinifloatIEEE(x float64, width, exponentWidth, exponentBias int) float64 {
	v := math.Abs(x)
	if v <= closeToZero {
		return x
	}
	m := width - exponentWidth - 1
	eMin, eMax := -exponentBias, 1<<exponentWidth-1-exponentBias
	e := clampInt(floorLog2(v), eMin, eMax)
	mant := math.Ldexp(v, -e) // in [1, 2) unless e was clamped
	kMax := math.Ldexp(1, m) - 1
	var q float64
	if e != eMin {
		k := clampF(math.RoundToEven(math.Ldexp(mant, m)-math.Ldexp(1, m)), 0, kMax)
		q = math.Ldexp(1+math.Ldexp(k, -m), e)
	} else {
		k := clampF(math.RoundToEven(math.Ldexp(mant, m-1)), 0, kMax)
		q = math.Ldexp(k, e+1-m)
	}
	return signOf(x) * q
}

// QuantizeMinifloatDenorm is minifloat_denorm_quantizer (spec §6.3): no
// implicit leading bit, value 2^e·k/2^M with k < 2^M, e = ⌊log2 |x|⌋ + 1
// clamped to [−bias, 2^E − 1 − bias]. The largest value is
// 2^e_max·(1 − 2^−M) (E4M3 → 224). |x| ≤ 1e-8 is returned unchanged.
//
// MASE computes e = ceil(log2(|x| + 1e-9)). For a power of two |x| ≥ 2^−5,
// float32 rounds |x| + 1e-9 back to |x|, so e comes out one lower and the
// mantissa saturates: MASE gives Q(1.0) = 0.875 in float32. The reference
// computes the intended exponent (what MASE gives in float64), so
// Q(1.0) = 1.0.
func QuantizeMinifloatDenorm(x float64, width, exponentWidth, exponentBias int) float64 {
	v := math.Abs(x)
	if v <= closeToZero {
		return x
	}
	m := width - exponentWidth - 1
	eMin, eMax := -exponentBias, 1<<exponentWidth-1-exponentBias
	e := clampInt(floorLog2(v)+1, eMin, eMax)
	k := clampF(math.RoundToEven(math.Ldexp(v, m-e)), 0, math.Ldexp(1, m)-1)
	return signOf(x) * math.Ldexp(k, e-m)
}

// QuantizeLog is log_quantizer (spec §6.4): 1 sign bit and width − 1
// exponent bits with bias exponentBias; Q(x) = sign(x + ε)·2^e with
// e = round(log2(|x| + ε)) clamped to [−bias, 2^(width−1) − 1 − bias] and
// ε = 0.1·2^−bias. Zero maps to +2^−bias. Rounding is in the log domain: the
// decision point between 2^k and 2^(k+1) is 2^(k+0.5), decided exactly.
func QuantizeLog(x float64, width, exponentBias int) float64 {
	eMin, eMax := -exponentBias, 1<<(width-1)-1-exponentBias
	eps := 0.1 * math.Ldexp(1, eMin)
	s := x + eps
	if s == 0 {
		return 0 // torch.sign(0) = 0
	}
	a := math.Abs(x) + eps
	e := floorLog2(a)
	if math.Ldexp(a, -e) >= math.Sqrt2 { // float64(√2) is the least float64 above √2
		e++
	}
	return math.Copysign(math.Ldexp(1, clampInt(e, eMin, eMax)), s)
}

// QuantizeBinaryBipolar is the deterministic bipolar binary quantiser:
// +1 for x ≥ 0, −1 otherwise.
func QuantizeBinaryBipolar(x float64) float64 {
	if x >= 0 {
		return 1
	}
	return -1
}

// QuantizeResidualSign is MASE's residual_sign_quantizer summed over its
// levels (spec §6.9), for len(means) levels: o_l = b(r_l)·|μ_l| with
// b(v) = sign(clamp(v, −1, 1)) (sign(0) = 0), r_0 = x, r_(l+1) = r_l − o_l;
// the result is Σ o_l. With means [2/3, 1/3]: 0.5 → 1/3, −2 → −1.
func QuantizeResidualSign(x float64, means []float64) float64 {
	out, r := 0.0, x
	for _, mu := range means {
		o := residualBinarize(r) * math.Abs(mu)
		out += o
		r -= o
	}
	return out
}

func residualBinarize(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
