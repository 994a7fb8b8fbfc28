package mxint8

import (
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes/bfloat16"
)

// group32 returns a group of 32 values starting with head, zero-filled.
func group32(head ...float32) []float32 {
	return append(slices.Clone(head), make([]float32, 32-len(head))...)
}

// TestAcceptance28to31 is spec §9 items 28–31 (group size 32, inputs
// rounded to bfloat16 first): exponents, mantissas and dequantised values,
// identical from the bit-trick loop, m/64·2^(E−127), the fast kernel and
// the graph op.
func TestAcceptance28to31(t *testing.T) {
	cases := []struct {
		item int
		in   []float32
		bf16 []float64 // the inputs rounded to bfloat16
		exp  uint8
		mant []int8
		deq  []float64
	}{
		{28, []float32{1.0, 0.3, -0.1}, []float64{1.0, 0.30078125, -0.10009765625}, 127, []int8{64, 19, -6, 0}, []float64{1.0, 0.296875, -0.09375, 0.0}},
		{29, []float32{0.3, -0.1}, nil, 125, []int8{77, -26}, []float64{0.30078125, -0.1015625}},
		{30, []float32{1.99, 0.5}, []float64{1.9921875}, 127, []int8{127, 32}, []float64{1.984375, 0.5}},
		{31, []float32{-3.0, 2.5, 0.01}, nil, 128, []int8{-96, 80, 0}, []float64{-3.0, 2.5, 0.0}},
	}
	for _, tc := range cases {
		for i, want := range tc.bf16 {
			if got := float64(math.Float32frombits(roundBF16Bits(math.Float32bits(tc.in[i])))); got != want {
				t.Errorf("item %d: bf16(%v) = %v, want %v", tc.item, tc.in[i], got, want)
			}
		}
		p, err := Pack(group32(tc.in...), 32)
		if err != nil {
			t.Fatal(err)
		}
		if p.Exponents()[0] != tc.exp {
			t.Errorf("item %d: E = %d, want %d", tc.item, p.Exponents()[0], tc.exp)
		}
		if got := p.Mantissas()[:len(tc.mant)]; !slices.Equal(got, tc.mant) {
			t.Errorf("item %d: mantissas %v, want %v", tc.item, got, tc.mant)
		}
		fast := make([]bfloat16.BFloat16, 32)
		if err := Dequantize(fast, p); err != nil {
			t.Fatal(err)
		}
		graphOut := runDequantizeGraph(t, p)
		for name, out := range map[string][]bfloat16.BFloat16{
			"bit trick": DequantizeReference(p), "m/64·2^(E-127)": DequantizeFormula(p), "fast kernel": fast, "graph op": graphOut,
		} {
			for i, want := range tc.deq {
				if got := out[i].Float64(); got != want {
					t.Errorf("item %d, %s: value %d = %v, want %v", tc.item, name, i, got, want)
				}
			}
		}
	}
	// 31: the bit trick for m = −96 (0xA0): sign 0x8000, |m| = 0x60 has
	// bit 0x40 set, frac = 0x40 → bf16 bits 0xC040 = −3.0.
	if b := bitTrick(-96, 128); b != 0xC040 || b.Float32() != -3 {
		t.Errorf("bit trick of 0xA0 with E=128 = %#04x (%v), want 0xc040 (-3)", uint16(b), b.Float32())
	}
	// 31: an all-zero group → scale 0, output 0.
	p, _ := Pack(make([]float32, 32), 32)
	if p.Exponents()[0] != 0 {
		t.Errorf("all-zero group: E = %d, want 0", p.Exponents()[0])
	}
	for _, v := range DequantizeReference(p) {
		if v != 0 {
			t.Fatalf("all-zero group decodes to %v", v)
		}
	}
}

// TestAcceptance32 is spec §9 item 32: 8.25 bits per element at group size
// 32, a theoretical saving of 74.21875%; the lab's measured saving
// 1 − 976.1616/2906.1997 = 66.41%; MXINT4's (32 − 4.25)/32 = 86.71875%.
func TestAcceptance32(t *testing.T) {
	p, _ := Pack(make([]float32, 32*100), 32)
	if b := p.BitsPerElement(); b != 8.25 {
		t.Errorf("bits per element %v, want 8.25", b)
	}
	if s := TheoreticalSaving(32); s != 0.7421875 {
		t.Errorf("theoretical saving %v, want 0.7421875", s)
	}
	if s := LabMeasuredSaving; math.Round(s*10000)/100 != 66.41 {
		t.Errorf("lab saving %v, want 66.41%%", s)
	}
	if s := (32 - 4.25) / 32; s != 0.8671875 {
		t.Errorf("MXINT4 saving %v", s)
	}
	for gs, want := range map[int]float64{8: 8 + 1, 16: 8.5, 64: 8.125, 512: 8 + 1.0/64} {
		if p, _ := Pack(make([]float32, 1024), gs); p.BitsPerElement() != want {
			t.Errorf("gs %d: %v bits, want %v", gs, p.BitsPerElement(), want)
		}
	}
}
