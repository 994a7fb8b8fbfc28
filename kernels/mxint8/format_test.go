package mxint8

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes/bfloat16"

	"github.com/gomase/gomase/mase/quant"
)

// testValues returns n float32 values mixing magnitudes: ordinary ones,
// tiny ones (below 2^−126 and bfloat16 subnormals), huge ones (up to
// float32's max, beyond bfloat16's), exact ties of the mantissa rounding,
// zeros of both signs and runs of zeros (all-zero groups).
func testValues(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, seed^0xabcdef))
	x := make([]float32, n)
	for i := range x {
		s := float32(1)
		if rng.IntN(2) == 0 {
			s = -1
		}
		var v float64
		switch r := rng.IntN(24); {
		case r < 2:
			v = 0
		case r < 4:
			v = math.Ldexp(rng.Float64(), -126-rng.IntN(20)) // subnormal float32
		case r < 5:
			v = math.Ldexp(1+rng.Float64(), 120+rng.IntN(8)) // up to float32's max
		case r < 6:
			v = math.MaxFloat32
		case r < 8:
			v = float64(rng.IntN(255)+1) / 128 * math.Ldexp(1, rng.IntN(6)-3) // ties
		case r < 10:
			v = math.Ldexp(rng.Float64(), rng.IntN(60)-30)
		default:
			v = rng.NormFloat64()
		}
		x[i] = s * float32(v)
	}
	// A few all-zero groups of every size, and negative zeros.
	for _, at := range []int{0, 512, 1536} {
		if at+512 <= n {
			clear(x[at : at+512])
		}
	}
	if n > 3000 {
		x[3000] = float32(math.Copysign(0, -1))
	}
	return x
}

func toF64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TestPackMatchesQuantReference checks Pack against mase/quant's
// MXInt8Quantize (the reference maths) for every group size, bit for bit,
// including partial last groups (compared with zero padding).
func TestPackMatchesQuantReference(t *testing.T) {
	for _, gs := range GroupSizes {
		for _, n := range []int{4096, 4096 + gs/2 + 3, 5} {
			x := testValues(n, uint64(gs*n))
			p, err := Pack(x, gs)
			if err != nil {
				t.Fatalf("gs %d n %d: %v", gs, n, err)
			}
			padded := toF64(x)
			for len(padded)%gs != 0 {
				padded = append(padded, 0)
			}
			wantM, wantE, err := quant.MXInt8Quantize(padded, gs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Mantissas(), wantM[:n]) {
				for i := range n {
					if p.Mantissas()[i] != wantM[i] {
						t.Fatalf("gs %d n %d: mantissa %d of %v = %d, want %d (exponent %d)", gs, n, i, x[i], p.Mantissas()[i], wantM[i], wantE[i/gs])
					}
				}
			}
			if !slices.Equal(p.Exponents(), wantE) {
				t.Fatalf("gs %d n %d: exponents %v, want %v", gs, n, p.Exponents()[:4], wantE[:4])
			}
			if p.Len() != n || p.NumGroups() != NumGroups(n, gs) || p.Bytes() != n+NumGroups(n, gs) || p.GroupSize() != gs {
				t.Errorf("gs %d n %d: len %d groups %d bytes %d", gs, n, p.Len(), p.NumGroups(), p.Bytes())
			}
			// Pack's output is canonical: NewPacked accepts it.
			if _, err := NewPacked(p.Mantissas(), p.Exponents(), gs); err != nil {
				t.Errorf("gs %d n %d: NewPacked rejects Pack's output: %v", gs, n, err)
			}
		}
	}
}

// TestDequantizersBitExact: the bit-trick loop, m/64·2^(E−127), the fast
// kernel, Float32s and mase/quant's two float64 dequantisers agree bit for
// bit on packed random data for every group size and length (vector
// prefix plus scalar tail, partial last groups).
func TestDequantizersBitExact(t *testing.T) {
	for _, gs := range GroupSizes {
		for _, n := range []int{1, 7, 8, 15, 16, 17, 3 * gs, 3*gs + 8, 4096 + gs - 1, 20000} {
			p, err := Pack(testValues(n, uint64(n+gs)), gs)
			if err != nil {
				t.Fatal(err)
			}
			checkAllEqual(t, p)
		}
	}
}

// checkAllEqual compares every dequantiser on p.
func checkAllEqual(t *testing.T, p *Packed) {
	t.Helper()
	ref := DequantizeReference(p)
	formula := DequantizeFormula(p)
	fast := make([]bfloat16.BFloat16, p.Len())
	if err := Dequantize(fast, p); err != nil {
		t.Fatal(err)
	}
	f32 := p.Float32s()
	for i := range ref {
		if ref[i] != formula[i] || ref[i] != fast[i] || math.Float32bits(f32[i]) != uint32(ref[i])<<16 {
			t.Fatalf("gs %d n %d: value %d (m %d, E %d): reference %#04x, formula %#04x, fast %#04x, float32 %v",
				p.GroupSize(), p.Len(), i, p.Mantissas()[i], p.Exponents()[i/p.GroupSize()], uint16(ref[i]), uint16(formula[i]), uint16(fast[i]), f32[i])
		}
	}
	if p.Len()%p.GroupSize() == 0 {
		q1, err1 := quant.MXInt8Dequantize(p.Mantissas(), p.Exponents(), p.GroupSize())
		q2, err2 := quant.MXInt8DequantizeBitTrick(p.Mantissas(), p.Exponents(), p.GroupSize())
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for i := range ref {
			if q1[i] != ref[i].Float64() || q2[i] != ref[i].Float64() {
				t.Fatalf("value %d: quant %v / %v, here %v", i, q1[i], q2[i], ref[i].Float64())
			}
		}
	}
}

// TestEveryEncoding decodes every canonical (mantissa, exponent) pair —
// mantissas −127..127 including the ±127 clamp values, exponents 0 (with
// zero mantissas only) and 1..254 — identically with all dequantisers,
// for every group size.
func TestEveryEncoding(t *testing.T) {
	for _, gs := range GroupSizes {
		p := everyEncoding(t, gs)
		reps := max(1, gs/256)
		checkAllEqual(t, p)
		// Extremes: E = 254 with m = ±127 is ±1.984375·2^127, E = 1 with
		// m = ±1 is ±2^−132 (a bfloat16 subnormal).
		ref := DequantizeReference(p)
		at := (MaxExponent - 1) * 256 * reps
		if got, want := ref[at].Float64(), -math.Ldexp(127.0/64, 127); got != want {
			t.Errorf("gs %d: E=254 m=-127 → %v, want %v", gs, got, want)
		}
		if got, want := ref[128].Float64(), math.Ldexp(1, -132); got != want {
			t.Errorf("gs %d: E=1 m=1 → %v, want %v", gs, got, want)
		}
		for _, v := range ref[len(ref)-gs:] {
			if v != 0 {
				t.Errorf("gs %d: an all-zero group decodes to %v, want +0", gs, v)
			}
		}
	}
}

// everyEncoding packs every canonical (mantissa, exponent) pair for group
// size gs: for each exponent 1..254 the mantissas −127..127 and 0 (in
// 256-value blocks; a group of 512 holds two blocks), then an all-zero
// group with exponent 0.
func everyEncoding(t *testing.T, gs int) *Packed {
	t.Helper()
	var m []int8
	var e []uint8
	reps := max(1, gs/256)
	for exp := 1; exp <= MaxExponent; exp++ {
		for range reps {
			for v := -127; v <= 127; v++ {
				m = append(m, int8(v))
			}
			m = append(m, 0)
		}
		for range 256 * reps / gs {
			e = append(e, uint8(exp))
		}
	}
	m = append(m, make([]int8, gs)...)
	e = append(e, 0)
	p, err := NewPacked(m, e, gs)
	if err != nil {
		t.Fatalf("gs %d: %v", gs, err)
	}
	return p
}

// TestNonCanonicalEncodings shows why NewPacked rejects m = −128, E = 255
// and E = 0 with nonzero mantissas: the lab's loop and m/64·2^(E−127)
// disagree there. It also checks the error messages.
func TestNonCanonicalEncodings(t *testing.T) {
	// The raw loop on those encodings.
	if got := bitTrick(-128, 127); got != 0 {
		t.Errorf("bit trick of m=-128 E=127 = %v, want +0 (the formula gives -2)", got)
	}
	if got := bitTrick(1, 0).Float64(); got != math.Ldexp(2, -133) {
		t.Errorf("bit trick of m=1 E=0 = %v, want 2^-132 (the formula gives 2^-133)", got)
	}
	if got := bitTrick(64, 255).Float32(); !math.IsInf(float64(got), 1) {
		t.Errorf("bit trick of m=64 E=255 = %v, want +Inf", got)
	}
	if got := bitTrick(1, 255).Float32(); !math.IsNaN(float64(got)) {
		t.Errorf("bit trick of m=1 E=255 = %v, want NaN (the formula gives 2^122)", got)
	}
	cases := []struct {
		m    []int8
		e    []uint8
		gs   int
		want string
	}{
		{make([]int8, 8), []uint8{0}, 24, "group size 24 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)"},
		{nil, nil, 8, "no mantissas (allowed: at least one)"},
		{make([]int8, 9), []uint8{1}, 8, "1 exponents for 9 mantissas in groups of 8 (allowed: one per group, 2)"},
		{[]int8{1, -128}, []uint8{127}, 8, "mantissa -128 at index 1 (allowed: -127..127"},
		{[]int8{1}, []uint8{255}, 8, "exponent 255 of group 0 (allowed: 0..254"},
		{[]int8{0, 0, 3}, []uint8{0}, 8, "group 0 has exponent 0 and mantissa 3 at index 2 (allowed: exponent 0 only for an all-zero group"},
	}
	for _, tc := range cases {
		_, err := NewPacked(tc.m, tc.e, tc.gs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPacked(%v, %v, %d) = %v, want an error containing %q", tc.m, tc.e, tc.gs, err, tc.want)
		}
	}
}

// TestPackErrors checks Pack's and Dequantize's errors.
func TestPackErrors(t *testing.T) {
	for _, tc := range []struct {
		x    []float32
		gs   int
		want string
	}{
		{[]float32{1}, 0, "group size 0 is not supported (allowed: 8, 16, 32, 64, 128, 256, 512)"},
		{[]float32{1}, 1024, "group size 1024 is not supported"},
		{nil, 32, "nothing to pack (allowed: at least one value)"},
		{[]float32{1, float32(math.NaN())}, 32, "value NaN at index 1 is not finite (allowed: finite numbers)"},
		{[]float32{float32(math.Inf(-1))}, 32, "value -Inf at index 0 is not finite"},
	} {
		_, err := Pack(tc.x, tc.gs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Pack(%v, %d) = %v, want an error containing %q", tc.x, tc.gs, err, tc.want)
		}
	}
	p, _ := Pack([]float32{1, 2, 3}, 8)
	if err := Dequantize(make([]bfloat16.BFloat16, 2), p); err == nil || !strings.Contains(err.Error(), "destination holds 2 values for 3 packed ones (allowed: exactly 3)") {
		t.Errorf("short destination: %v", err)
	}
	if err := Dequantize(nil, nil); err == nil || !strings.Contains(err.Error(), "packed tensor is nil") {
		t.Errorf("nil packed: %v", err)
	}
}

// TestSaturationAndPartialGroups: values beyond bfloat16's range saturate
// (E = 254, m = ±127), and a partial last group is encoded as the zero
// padded group would be.
func TestSaturationAndPartialGroups(t *testing.T) {
	p, err := Pack([]float32{math.MaxFloat32, -math.MaxFloat32, 1}, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Mantissas(), []int8{127, -127, 0}) || !slices.Equal(p.Exponents(), []uint8{254}) {
		t.Errorf("saturation: %v %v", p.Mantissas(), p.Exponents())
	}
	x := []float32{0.5, -0.25, 3, 0.125, 1, 2, 4, 8, 0.75, -0.375, 0.1}
	p, _ = Pack(x, 8)
	padded := append(slices.Clone(x), make([]float32, 5)...)
	q, _ := Pack(padded, 8)
	if !slices.Equal(p.Mantissas(), q.Mantissas()[:len(x)]) || !slices.Equal(p.Exponents(), q.Exponents()) {
		t.Errorf("partial group %v %v differs from padded %v %v", p.Mantissas(), p.Exponents(), q.Mantissas(), q.Exponents())
	}
	if p.Bytes() != 11+2 || p.BitsPerElement() != 8*13.0/11 {
		t.Errorf("partial group storage %d bytes, %v bits", p.Bytes(), p.BitsPerElement())
	}
}

// TestWords round-trips the int32 word storage.
func TestWords(t *testing.T) {
	for n := 1; n <= 9; n++ {
		b := make([]int8, n)
		for i := range b {
			b[i] = int8(-100 + 37*i)
		}
		w := Words(b)
		if len(w) != (n+3)/4 || !slices.Equal(Unwords[int8](w, n), b) {
			t.Errorf("n %d: words %v → %v", n, w, Unwords[int8](w, n))
		}
	}
	if w := Words([]uint8{0x01, 0x02, 0x03, 0xF4}); w[0] != int32(-0x0BFCFDFF) { // 0xF4030201
		t.Errorf("little-endian word %#x", uint32(w[0]))
	}
}
