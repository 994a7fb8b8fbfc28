package mxint8

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// GroupSizes are the supported group sizes (those of MASE's CUDA kernel).
var GroupSizes = []int{8, 16, 32, 64, 128, 256, 512}

// Format constants.
const (
	// ExponentBias is the bias of the shared exponent E (float32's).
	ExponentBias = 127
	// MantissaMax is the largest mantissa magnitude the quantiser emits.
	MantissaMax = 127
	// MaxExponent is the largest exponent a packed group may hold (255,
	// bfloat16's all-ones exponent, is rejected: see the package doc).
	MaxExponent = 254
)

// Packed is an MXINT8 tensor: n int8 mantissas and one uint8 shared
// exponent per group of GroupSize consecutive values (the last group may
// be partial). Its zero value is not usable: build one with Pack or
// NewPacked, which check the encoding.
type Packed struct {
	mantissas []int8
	exponents []uint8
	groupSize int
}

// CheckGroupSize returns an error unless groupSize is one of GroupSizes.
func CheckGroupSize(groupSize int) error {
	if !slices.Contains(GroupSizes, groupSize) {
		return fmt.Errorf("mxint8: group size %d is not supported (allowed: %s)", groupSize, intList(GroupSizes))
	}
	return nil
}

// NumGroups is the number of groups (and of exponents) of n values:
// ceil(n / groupSize).
func NumGroups(n, groupSize int) int { return (n + groupSize - 1) / groupSize }

// StorageBytes is the size of n packed values: n mantissa bytes plus one
// exponent byte per group.
func StorageBytes(n, groupSize int) int { return n + NumGroups(n, groupSize) }

// TheoreticalSaving is the saving of MXINT8 over float32 with full groups:
// 1 − (8 + 8/groupSize)/32 (0.7421875 at 32).
func TheoreticalSaving(groupSize int) float64 {
	return 1 - (8+8/float64(groupSize))/32
}

// Pack quantises values to MXINT8 in groups of groupSize, as MASE's
// quantize1d_simulated: each value is rounded to bfloat16 (nearest even;
// beyond the largest finite bfloat16 it saturates there, as
// quant.RoundBF16), magnitudes below 2^−126 count as zero, the group's
// exponent E is the largest float32 exponent field of its magnitudes (0
// for an all-zero group), and each mantissa is sign ·
// clamp(round_half_even(|w| / 2^(E−127) · 64), 0, 127). The last group may
// be partial (see the package doc). values must be finite and non-empty.
func Pack(values []float32, groupSize int) (*Packed, error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("mxint8: nothing to pack (allowed: at least one value)")
	}
	for i, v := range values {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("mxint8: value %v at index %d is not finite (allowed: finite numbers)", v, i)
		}
	}
	p := &Packed{
		mantissas: make([]int8, len(values)),
		exponents: make([]uint8, NumGroups(len(values), groupSize)),
		groupSize: groupSize,
	}
	var rounded [512]uint32 // bf16-rounded float32 bits of one group
	for g := range p.exponents {
		lo, hi := g*groupSize, min((g+1)*groupSize, len(values))
		emax := uint32(0)
		for i, v := range values[lo:hi] {
			b := roundBF16Bits(math.Float32bits(v))
			rounded[i] = b
			emax = max(emax, b>>23&0xFF)
		}
		p.exponents[g] = uint8(emax)
		for i := range hi - lo {
			p.mantissas[lo+i] = mantissa(rounded[i], emax)
		}
	}
	return p, nil
}

// roundBF16Bits rounds finite float32 bits to bfloat16 (round half to
// even on the bits, which is also right for subnormals), saturating at the
// largest finite bfloat16 instead of overflowing to infinity. The result
// is float32 bits with the low 16 bits clear.
func roundBF16Bits(bits uint32) uint32 {
	r := (bits + 0x7FFF + (bits >> 16 & 1)) &^ 0xFFFF
	if r&0x7F800000 == 0x7F800000 {
		r = bits&0x80000000 | 0x7F7F0000
	}
	return r
}

// mantissa encodes one bfloat16-rounded value (float32 bits b) in a group
// of exponent emax: |w|·2^(133−emax) = (128 + f) / 2^(emax − e + 1) for a
// normal w = (1 + f/128)·2^(e−127), rounded half to even and clamped to
// 127; values below 2^−126 (exponent field 0) give 0.
func mantissa(b, emax uint32) int8 {
	e := b >> 23 & 0xFF
	if e == 0 {
		return 0
	}
	v := 128 + (b >> 16 & 0x7F)
	s := emax - e + 1 // ≥ 1
	var q uint32
	if s <= 9 { // beyond, v / 2^s < 1/2 rounds to 0
		q = v >> s
		rem, half := v&(1<<s-1), uint32(1)<<(s-1)
		if rem > half || rem == half && q&1 == 1 {
			q++
		}
	}
	q = min(q, MantissaMax)
	if b&0x80000000 != 0 {
		return -int8(q)
	}
	return int8(q)
}

// NewPacked wraps encoded MXINT8 data (it keeps the slices, which must not
// be modified afterwards). It checks the group size, that there is one
// exponent per group (ceil(len(mantissas)/groupSize), the last group may
// be partial), and that the encoding is canonical: mantissas in
// [−127, 127], exponents in [0, 254], and exponent 0 only for a group of
// zero mantissas (see the package doc for why).
func NewPacked(mantissas []int8, exponents []uint8, groupSize int) (*Packed, error) {
	if err := CheckGroupSize(groupSize); err != nil {
		return nil, err
	}
	if len(mantissas) == 0 {
		return nil, fmt.Errorf("mxint8: no mantissas (allowed: at least one)")
	}
	if want := NumGroups(len(mantissas), groupSize); len(exponents) != want {
		return nil, fmt.Errorf("mxint8: %d exponents for %d mantissas in groups of %d (allowed: one per group, %d)",
			len(exponents), len(mantissas), groupSize, want)
	}
	for i, m := range mantissas {
		if m == math.MinInt8 {
			return nil, fmt.Errorf("mxint8: mantissa -128 at index %d (allowed: -127..127; the bit-trick loop decodes -128 as 0, m/64·2^(E-127) does not)", i)
		}
	}
	for g, e := range exponents {
		if e > MaxExponent {
			return nil, fmt.Errorf("mxint8: exponent %d of group %d (allowed: 0..%d; 255 is bfloat16's Inf/NaN exponent)", e, g, MaxExponent)
		}
		if e == 0 {
			lo, hi := g*groupSize, min((g+1)*groupSize, len(mantissas))
			for i := lo; i < hi; i++ {
				if mantissas[i] != 0 {
					return nil, fmt.Errorf("mxint8: group %d has exponent 0 and mantissa %d at index %d (allowed: exponent 0 only for an all-zero group; the bit-trick loop would decode a bfloat16 subnormal)",
						g, mantissas[i], i)
				}
			}
		}
	}
	return &Packed{mantissas: mantissas, exponents: exponents, groupSize: groupSize}, nil
}

// Len is the number of packed values.
func (p *Packed) Len() int { return len(p.mantissas) }

// GroupSize is the number of values sharing one exponent.
func (p *Packed) GroupSize() int { return p.groupSize }

// NumGroups is the number of groups (exponents).
func (p *Packed) NumGroups() int { return len(p.exponents) }

// Mantissas returns the int8 mantissas (the packed data itself: do not
// modify it).
func (p *Packed) Mantissas() []int8 { return p.mantissas }

// Exponents returns the uint8 shared exponents, one per group (the packed
// data itself: do not modify it).
func (p *Packed) Exponents() []uint8 { return p.exponents }

// Bytes is the storage size: one byte per mantissa and one per exponent.
func (p *Packed) Bytes() int { return len(p.mantissas) + len(p.exponents) }

// BitsPerElement is 8·Bytes/Len: 8 + 8/GroupSize with full groups.
func (p *Packed) BitsPerElement() float64 { return 8 * float64(p.Bytes()) / float64(p.Len()) }

// Float32s returns the dequantised values as float32 (exact: every MXINT8
// value is a bfloat16).
func (p *Packed) Float32s() []float32 {
	out := make([]float32, p.Len())
	p.eachGroup(func(lo, hi int, scale float32) {
		for i := lo; i < hi; i++ {
			out[i] = float32(p.mantissas[i]) * scale
		}
	})
	return out
}

// eachGroup calls f for every group with its index range and its scale
// 2^(E−133) = 2^(E−127)/64.
func (p *Packed) eachGroup(f func(lo, hi int, scale float32)) {
	for g, e := range p.exponents {
		f(g*p.groupSize, min((g+1)*p.groupSize, len(p.mantissas)), scales[e])
	}
}

// scales[E] is 2^(E−133) as float32 (exact: subnormal below E = 7).
var scales = func() (t [256]float32) {
	for e := range t {
		t[e] = float32(math.Ldexp(1, e-ExponentBias-6))
	}
	return t
}()

// intList formats 8, 16, 32 as "8, 16, 32".
func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// LabMeasuredSaving is the saving the lab measured on DeBERTa (peak GPU
// memory, Linear layers but not the classifier packed, embeddings FP32):
// 1 − 976.1616/2906.1997 ≈ 66.41%, against mxint8.TheoreticalSaving(32) =
// 74.21875%. passes.PackReport.Saving measures parameter bytes, not peak memory.
const LabMeasuredSaving = 1 - 976.1616/2906.1997
