package quant

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func intp(v int) *int { return &v }

// TestAcceptanceScalar covers spec §9 items 9–14, 18 and 19.
func TestAcceptanceScalar(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(float64) float64
		x    float64
		want float64
	}{
		// 9
		{"integer(0.3, 8, 4)", func(x float64) float64 { return QuantizeInteger(x, 8, 4) }, 0.3, 0.3125},
		{"integer(-10, 8, 4)", func(x float64) float64 { return QuantizeInteger(x, 8, 4) }, -10, -8},
		{"integer(10, 8, 4)", func(x float64) float64 { return QuantizeInteger(x, 8, 4) }, 10, 7.9375},
		{"integer(0.3, 10, 5)", func(x float64) float64 { return QuantizeInteger(x, 10, 5) }, 0.3, 0.3125},
		// 10: round half to even
		{"integer(0.09375, 8, 4) 1.5→2", func(x float64) float64 { return QuantizeInteger(x, 8, 4) }, 0.09375, 0.125},
		{"integer(0.15625, 8, 4) 2.5→2", func(x float64) float64 { return QuantizeInteger(x, 8, 4) }, 0.15625, 0.125},
		// 11
		{"integer_floor(-0.3, 8, 3)", func(x float64) float64 { return QuantizeIntegerFloor(x, 8, 3) }, -0.3, -0.375},
		{"integer(-1.3, 4, 2)", func(x float64) float64 { return QuantizeInteger(x, 4, 2) }, -1.3, -1.25},
		{"integer(1.9, 4, 2)", func(x float64) float64 { return QuantizeInteger(x, 4, 2) }, 1.9, 1.75},
		// 12: E4M3, bias 7
		{"minifloat_ieee 0.3", mfIEEE, 0.3, 0.3125},
		{"minifloat_ieee 1000", mfIEEE, 1000, 480},
		{"minifloat_ieee 0.001", mfIEEE, 0.001, 0.001953125},
		{"minifloat_ieee 1.99", mfIEEE, 1.99, 1.875},
		{"minifloat_ieee -2.7", mfIEEE, -2.7, -2.75},
		{"minifloat_ieee 0", mfIEEE, 0, 0},
		// 13 (1.0 → 1.0: the exact value; MASE's float32 gives 0.875)
		{"minifloat_denorm 0.3", mfDenorm, 0.3, 0.3125},
		{"minifloat_denorm 0.75", mfDenorm, 0.75, 0.75},
		{"minifloat_denorm 1000", mfDenorm, 1000, 224},
		{"minifloat_denorm -0.01", mfDenorm, -0.01, -0.009765625},
		{"minifloat_denorm 1.0 (exact, not float32's 0.875)", mfDenorm, 1.0, 1.0},
		// 14: log width 8, bias 63
		{"log 0.3", log8, 0.3, 0.25},
		{"log -0.36", log8, -0.36, -0.5},
		{"log 3", log8, 3, 4},
		{"log 100", log8, 100, 128},
		{"log 0", log8, 0, math.Ldexp(1, -63)},
		{"log(100, 4)", func(x float64) float64 { return QuantizeLog(x, 4, DefaultLogBias(4)) }, 100, 16},
		{"log(0.01, 4)", func(x float64) float64 { return QuantizeLog(x, 4, DefaultLogBias(4)) }, 0.01, 0.125},
		// 18
		{"binary bipolar 0.3", QuantizeBinaryBipolar, 0.3, 1},
		{"binary bipolar -0.2", QuantizeBinaryBipolar, -0.2, -1},
		{"binary bipolar 0", QuantizeBinaryBipolar, 0, 1},
		// 19
		{"residual 0.5", residual2, 0.5, 1.0 / 3},
		{"residual -2", residual2, -2, -1},
		{"residual 0.9", residual2, 0.9, 1},
		{"residual 0.2", residual2, 0.2, 1.0 / 3},
		{"residual 0", residual2, 0, 0},
	} {
		if got := tc.f(tc.x); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := math.Ldexp(1, -63); math.Abs(got-1.0842e-19) > 1e-23 {
		t.Errorf("2^-63 = %v", got)
	}
	// 11: hardware encoding.
	if got := IntegerHardware(-0.3, 8, 3, true); got != 0xfd {
		t.Errorf("integer_floor_quantizer_for_hw(-0.3, 8, 3) = %#x, want 0xfd", got)
	}
	if got := IntegerHardware(-0.3, 8, 3, false); got != 0xfe { // round(−2.4) = −2
		t.Errorf("integer_quantizer_for_hw(-0.3, 8, 3) = %#x, want 0xfe", got)
	}
	if got := IntegerHardware(10, 8, 4, false); got != 0x7f {
		t.Errorf("integer_quantizer_for_hw(10, 8, 4) = %#x, want 0x7f", got)
	}
	if got := QuantizeIntegerUnsigned(-1, 8, 4, false); got != 0 {
		t.Errorf("unsigned(-1) = %v, want 0", got)
	}
	if got := QuantizeIntegerUnsigned(100, 8, 4, false); got != 15.9375 {
		t.Errorf("unsigned(100, 8, 4) = %v, want 15.9375", got)
	}
}

func mfIEEE(x float64) float64   { return QuantizeMinifloatIEEE(x, 8, 4, DefaultExponentBias(4)) }
func mfDenorm(x float64) float64 { return QuantizeMinifloatDenorm(x, 8, 4, DefaultExponentBias(4)) }
func log8(x float64) float64     { return QuantizeLog(x, 8, DefaultLogBias(8)) }
func residual2(x float64) float64 {
	return QuantizeResidualSign(x, DefaultResidualMeans(2))
}

// TestAcceptanceTensors covers spec §9 items 15–17 and 20, through
// Spec.Reference.
func TestAcceptanceTensors(t *testing.T) {
	blk := []int{4}
	for _, tc := range []struct {
		name  string
		spec  Spec
		x     []float64
		shape []int
		want  []float64
	}{
		{"block_fp w8", Spec{Format: BlockFP, Width: 8, ExponentWidth: 8, BlockSize: blk}, []float64{1.0, 0.5, 0.25, -0.3}, nil, []float64{0.9921875, 0.5, 0.25, -0.296875}},
		{"block_fp w4", Spec{Format: BlockFP, Width: 4, ExponentWidth: 8, BlockSize: blk}, []float64{1.0, 0.5, 0.25, -0.3}, nil, []float64{0.875, 0.5, 0.25, -0.25}},
		{"block_fp max 3", Spec{Format: BlockFP, Width: 8, ExponentWidth: 8, BlockSize: blk}, []float64{3.0, 0.1, -0.05, 0.0}, nil, []float64{3.0, 0.09375, -0.0625, 0.0}},
		{"block_log bias 127", Spec{Format: BlockLog, Width: 8, ExponentBiasWidth: 8, BlockSize: blk}, []float64{1.0, 0.5, 0.25, -0.3}, nil, []float64{1.0, 0.5, 0.25, -0.25}},
		{"block_log bias 125", Spec{Format: BlockLog, Width: 8, ExponentBiasWidth: 8, BlockSize: blk}, []float64{3.0, 0.5, 0.25, -0.3}, nil, []float64{4.0, 0.5, 0.25, -0.25}},
		{"block_minifloat bias 1", Spec{Format: BlockMinifloat, Width: 8, ExponentWidth: 4, ExponentBiasWidth: 8, BlockSize: blk}, []float64{3.0, 0.3, -1.0, 0.05}, nil, []float64{3.0, 0.25, -1.0, 0.0}},
		{"block_minifloat bias 0", Spec{Format: BlockMinifloat, Width: 8, ExponentWidth: 4, ExponentBiasWidth: 8, BlockSize: blk}, []float64{0.9, 0.3, -0.1, 0.05}, nil, []float64{1.0, 0.25, -0.0, 0.0}},
		{"ternary unscaled 4-D", Spec{Format: Ternary}, []float64{0.9, -0.05, 0.3, -0.6}, []int{1, 1, 1, 4}, []float64{1, 0, 0, -1}},
		{"ternary scaled 4-D", Spec{Format: Ternary, ScalingFactor: true}, []float64{0.9, -0.05, 0.3, -0.6}, []int{1, 1, 1, 4}, []float64{0.75, 0, 0, -0.75}},
		// Unlike MASE, ternary works on a 2-D Linear weight: per output row.
		{"ternary 2-D weight", Spec{Format: Ternary, ScalingFactor: true}, []float64{0.9, -0.05, 0.3, -0.6, 0.1, 0.1, 0.1, -0.1}, []int{2, 4}, []float64{0.75, 0, 0, -0.75, 0.1, 0.1, 0.1, -0.1}},
		{"binary bipolar", Spec{Format: Binary, Bipolar: true}, []float64{0.3, -0.2, 0.0}, nil, []float64{1, -1, 1}},
		// Non-bipolar binary on a 2-D weight: α = mean|row| per row.
		{"binary zero-scaled 2-D", Spec{Format: Binary}, []float64{1, -3, 2, 0, 0.5, 0.5}, []int{2, 3}, []float64{2, 0, 2, 0, 1.0 / 3, 1.0 / 3}},
	} {
		got, err := tc.spec.Reference(tc.x, tc.shape)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i := range tc.want {
			if math.Abs(got[i]-tc.want[i]) > 1e-15 {
				t.Errorf("%s = %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	// Ternary: the threshold is 0.75·mean|x| = 0.346875 (strict), α = 0.75.
	if d := 0.75 * (0.9 + 0.05 + 0.3 + 0.6) / 4; math.Abs(d-0.346875) > 1e-16 {
		t.Errorf("Δ = %v, want 0.346875", d)
	}
	if got := QuantizeTernary([]float64{2, 1, -1}, nil, false); !slices.Equal(got, []float64{1, 0, 0}) {
		t.Errorf("ternary at |x| = Δ = 1: %v, want [1 0 0] (the comparison is strict)", got)
	}
}

// TestAcceptanceMXInt8 covers spec §9 items 28–31 (group size 32).
func TestAcceptanceMXInt8(t *testing.T) {
	group := func(head ...float64) []float64 { return append(head, make([]float64, 32-len(head))...) }
	for _, tc := range []struct {
		name  string
		x     []float64
		bf16  []float64
		scale uint8
		mant  []int8
		deq   []float64
	}{
		{"28", group(1.0, 0.3, -0.1), []float64{1.0, 0.30078125, -0.10009765625}, 127, []int8{64, 19, -6, 0}, []float64{1.0, 0.296875, -0.09375, 0}},
		{"29", group(0.3, -0.1), []float64{0.30078125, -0.10009765625}, 125, []int8{77, -26}, []float64{0.30078125, -0.1015625}},
		{"30", group(1.99, 0.5), []float64{1.9921875, 0.5}, 127, []int8{127, 32}, []float64{1.984375, 0.5}},
		{"31", group(-3.0, 2.5, 0.01), []float64{-3.0, 2.5}, 128, []int8{-96, 80, 0}, []float64{-3.0, 2.5, 0.0}},
		{"all zero", group(), nil, 0, []int8{0, 0}, []float64{0, 0}},
	} {
		for i, want := range tc.bf16 {
			if got := RoundBF16(tc.x[i]); got != want {
				t.Errorf("%s: bf16(%v) = %v, want %v", tc.name, tc.x[i], got, want)
			}
		}
		m, s, err := MXInt8Quantize(tc.x, 32)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 1 || s[0] != tc.scale {
			t.Errorf("%s: scales %v, want [%d]", tc.name, s, tc.scale)
		}
		if !slices.Equal(m[:len(tc.mant)], tc.mant) {
			t.Errorf("%s: mantissas %v, want %v", tc.name, m[:len(tc.mant)], tc.mant)
		}
		d1, err := MXInt8Dequantize(m, s, 32)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := MXInt8DequantizeBitTrick(m, s, 32)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d1, d2) {
			t.Errorf("%s: m/64·2^(E−127) %v ≠ bit trick %v", tc.name, d1, d2)
		}
		if !slices.Equal(d1[:len(tc.deq)], tc.deq) {
			t.Errorf("%s: dequantised %v, want %v", tc.name, d1[:len(tc.deq)], tc.deq)
		}
	}
	// 31: the bit trick for m = −96 (0xA0) builds bf16 bits 0xC040 = −3.0.
	if v := bf16(0xC040); v != -3 {
		t.Errorf("bf16(0xC040) = %v, want -3", v)
	}
	// Every mantissa and exponent decodes identically both ways.
	var all []int8
	for m := -127; m <= 127; m++ {
		all = append(all, int8(m))
	}
	all = append(all, 0) // 256 values = 8 groups of 32
	scales := []uint8{1, 60, 120, 126, 127, 128, 200, 254}
	d1, _ := MXInt8Dequantize(all, scales, 32)
	d2, err := MXInt8DequantizeBitTrick(all, scales, 32)
	if err != nil || !slices.Equal(d1, d2) {
		t.Errorf("bit trick differs from m/64·2^(E−127): %v", err)
	}
	// 32/33: the storage cost.
	if b := (Spec{Format: MXInt8, GroupSize: 32}).BitsPerElement(); b != 8.25 {
		t.Errorf("mxint8/32 bits = %v, want 8.25", b)
	}
	if saving := (32 - 8.25) / 32; saving != 0.7421875 {
		t.Errorf("saving %v", saving)
	}
	// Errors: unsupported group size, numel not divisible.
	if _, _, err := MXInt8Quantize(make([]float64, 32), 24); err == nil || !contains(err, "group_size 24 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)") {
		t.Errorf("group 24: %v", err)
	}
	if _, _, err := MXInt8Quantize(make([]float64, 40), 32); err == nil || !contains(err, "40 elements are not a multiple of group_size 32") {
		t.Errorf("40 values: %v", err)
	}
}

// TestBlockShapeRules checks MASE's blocking of §6.5.
func TestBlockShapeRules(t *testing.T) {
	for _, tc := range []struct {
		shape, block []int
		skip         bool
		want         []int
	}{
		{[]int{10}, []int{16}, false, []int{10}},              // 1-D bias, oversize → whole
		{[]int{40}, []int{16}, false, []int{16}},              // 1-D, padded to 48
		{[]int{40}, []int{16}, true, []int{16}},               // 1-D ignores skip_first_dim
		{[]int{8, 64}, []int{1, 16}, false, []int{1, 16}},     // weight: 16 inputs of one row
		{[]int{8, 64}, []int{16}, false, []int{8, 16}},        // weight with [16]: unfold tile of all rows
		{[]int{4, 64}, []int{16}, true, []int{1, 16}},         // 2-D activation: per row
		{[]int{4, 64}, []int{4, 16}, true, []int{1, 16}},      // the first axis is skipped
		{[]int{2, 10, 64}, []int{16}, true, []int{1, 10, 16}}, // 3-D: T×16 tiles
		{[]int{2, 10, 64}, []int{1, 16}, true, []int{1, 1, 16}},
		{[]int{2, 10, 64}, []int{-1, -1}, true, []int{1, 10, 64}},
		{[]int{3, 5}, []int{1, 9, 2}, false, []int{3, 2}}, // extra leading entries dropped; 9 > 3 → 3
	} {
		if got := BlockShape(tc.shape, tc.block, tc.skip); !slices.Equal(got, tc.want) {
			t.Errorf("BlockShape(%v, %v, %v) = %v, want %v", tc.shape, tc.block, tc.skip, got, tc.want)
		}
	}
	// Padding is cropped and blocks never mix rows: a 2-D activation with
	// one large row leaves the other row's scale alone.
	s := Spec{Format: BlockFP, Width: 4, ExponentWidth: 8, BlockSize: []int{16}, SkipFirstDim: true}
	got, err := s.Reference([]float64{100, 1, 0.3, 0.3, 0.5, 0.26}, []int{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{96, 0, 0, 0.3125, 0.4375, 0.25} // 0.5 is the block max: it saturates
	if !slices.Equal(got, want) {
		t.Errorf("2-D activation block_fp = %v, want %v", got, want)
	}
	// All-zero blocks take the smallest non-zero block max; zeros stay 0.
	got, _ = Spec{Format: BlockLog, Width: 4, ExponentBiasWidth: 4, BlockSize: []int{2}}.Reference([]float64{0, 0, 0.5, 0.25}, nil)
	// block [0.5, 0.25]: bias = 7 − (−1) = 8 → range 2^-8..2^-1; zero block uses the same bias: 0 → 2^-8.
	if want := []float64{math.Ldexp(1, -8), math.Ldexp(1, -8), 0.5, 0.25}; !slices.Equal(got, want) {
		t.Errorf("block_log zero block = %v, want %v", got, want)
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
