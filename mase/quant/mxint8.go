package quant

import (
	"fmt"
	"math"
	"slices"
)

// maxBF16 is the largest finite bfloat16, (2 − 2^−7)·2^127.
var maxBF16 = math.Ldexp(2-math.Ldexp(1, -7), 127)

// minNormal32 is 2^−126, the smallest normal float32 (and bfloat16).
var minNormal32 = math.Ldexp(1, -126)

// RoundBF16 rounds x to bfloat16 (8 significant bits, float32's exponent
// range) with round-half-to-even, as torch's .to(torch.bfloat16) does.
// Values beyond the largest finite bfloat16 saturate to ±maxBF16 (IEEE
// would give ±Inf, which MXINT8 cannot encode). NaN and ±Inf are returned
// unchanged.
func RoundBF16(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	a := math.Abs(x)
	e := max(floorLog2(a), -126) // below 2^−126 bfloat16 is subnormal: step 2^−133
	r := math.Ldexp(math.RoundToEven(math.Ldexp(a, 7-e)), e-7)
	return math.Copysign(math.Min(r, maxBF16), x)
}

// checkMXInt8Group checks an MXINT8 group size against a tensor length.
func checkMXInt8Group(n, groupSize int) error {
	if !slices.Contains(MXInt8GroupSizes, groupSize) {
		return fmt.Errorf("mxint8 group_size %d is not supported (allowed: %s)", groupSize, intList(MXInt8GroupSizes))
	}
	if n%groupSize != 0 {
		return fmt.Errorf("mxint8: %d elements are not a multiple of group_size %d (allowed: numel divisible by the group size)", n, groupSize)
	}
	return nil
}

// MXInt8Quantize is the lab's quantize1d_simulated (spec §6.11): x is
// rounded to bfloat16, split into groups of groupSize consecutive values,
// and each group stores one 8-bit exponent E (bias 127: the float32
// exponent field of its largest magnitude, 0 for an all-zero group) and
// one int8 mantissa per value, m = sign·clamp(round(|w|/2^(E−127)·64), 0,
// 127), so that value = m/64·2^(E−127). Magnitudes below 2^−126 count as
// zero. groupSize must be one of MXInt8GroupSizes and divide len(x); the
// values must be finite.
func MXInt8Quantize(x []float64, groupSize int) (mantissas []int8, scales []uint8, err error) {
	if err := checkMXInt8Group(len(x), groupSize); err != nil {
		return nil, nil, err
	}
	if err := checkFinite(x); err != nil {
		return nil, nil, err
	}
	mantissas = make([]int8, len(x))
	scales = make([]uint8, len(x)/groupSize)
	a := make([]float64, groupSize)
	for g := range scales {
		group := x[g*groupSize : (g+1)*groupSize]
		exp := 0
		for i, v := range group {
			a[i] = math.Abs(RoundBF16(v))
			if a[i] < minNormal32 {
				a[i] = 0
				continue
			}
			exp = max(exp, floorLog2(a[i])+mxint8ScaleBias)
		}
		scales[g] = uint8(exp)
		shift := max(exp, 1) - mxint8ScaleBias // an all-zero group divides by 2^−126
		for i, v := range group {
			m := clampF(math.RoundToEven(math.Ldexp(a[i], 6-shift)), 0, mxint8MantissaMax)
			if RoundBF16(v) < 0 {
				m = -m
			}
			mantissas[g*groupSize+i] = int8(m)
		}
	}
	return mantissas, scales, nil
}

// checkMXInt8Encoded checks encoded MXINT8 data before dequantising.
func checkMXInt8Encoded(mantissas []int8, scales []uint8, groupSize int) error {
	if err := checkMXInt8Group(len(mantissas), groupSize); err != nil {
		return err
	}
	if len(scales) != len(mantissas)/groupSize {
		return fmt.Errorf("mxint8: %d scales for %d mantissas in groups of %d (allowed: one scale per group, %d)", len(scales), len(mantissas), groupSize, len(mantissas)/groupSize)
	}
	for g, s := range scales {
		if s == 255 {
			return fmt.Errorf("mxint8: scale %d of group %d is the all-ones exponent (allowed: 0..254)", s, g)
		}
	}
	return nil
}

// MXInt8Dequantize decodes MXINT8 as value = m/64·2^(E−127).
func MXInt8Dequantize(mantissas []int8, scales []uint8, groupSize int) ([]float64, error) {
	if err := checkMXInt8Encoded(mantissas, scales, groupSize); err != nil {
		return nil, err
	}
	out := make([]float64, len(mantissas))
	for i, m := range mantissas {
		out[i] = math.Ldexp(float64(m)/64, int(scales[i/groupSize])-mxint8ScaleBias)
	}
	return out, nil
}

// bf16 turns bfloat16 bits into their value.
func bf16(bits uint16) float64 { return float64(math.Float32frombits(uint32(bits) << 16)) }

// MXInt8DequantizeBitTrick decodes MXINT8 the way the lab's CPU loop
// (dequantize1d_host) does: the bfloat16 with the mantissa's sign, the
// group exponent E and fraction bits (|m| & 63) << 1 is ±2^(E−127)·(1 +
// (|m|&63)/64); bit 6 of |m| plays the role of bfloat16's implicit leading
// 1, so when it is clear the loop subtracts ±2^(E−127). The result equals
// m/64·2^(E−127) exactly (it has at most 7 significant bits).
func MXInt8DequantizeBitTrick(mantissas []int8, scales []uint8, groupSize int) ([]float64, error) {
	if err := checkMXInt8Encoded(mantissas, scales, groupSize); err != nil {
		return nil, err
	}
	out := make([]float64, len(mantissas))
	for i, m := range mantissas {
		sign := uint16(uint8(m)&0x80) << 8
		exp := uint16(scales[i/groupSize]) << 7
		abs := int(m)
		if abs < 0 {
			abs = -abs
		}
		mabs := uint16(abs) // |−128| = 128 keeps bit 7 only and decodes as ±2^(E−127)·0
		frac := (mabs & 0x3F) << 1
		v := bf16(sign | exp | frac)
		if mabs&0x40 == 0 {
			v -= bf16(sign | exp)
		}
		out[i] = v
	}
	return out, nil
}

// QuantizeMXInt8 quantises and dequantises: the values MXINT8 stores for x.
func QuantizeMXInt8(x []float64, groupSize int) ([]float64, error) {
	m, s, err := MXInt8Quantize(x, groupSize)
	if err != nil {
		return nil, err
	}
	return MXInt8Dequantize(m, s, groupSize)
}

// checkFinite rejects NaN and ±Inf inputs.
func checkFinite(x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("value %v at index %d is not finite (allowed: finite numbers)", v, i)
		}
	}
	return nil
}
