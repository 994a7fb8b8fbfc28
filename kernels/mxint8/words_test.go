package mxint8

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDequantizeWordsMatchesDequantize(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, gs := range []int{8, 32, 512} {
		for _, n := range []int{1, 7, 100, 1031} {
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
			}
			p, err := Pack(vals, gs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DequantizeWords(Words(p.Mantissas()), Words(p.Exponents()), n, gs)
			if err != nil {
				t.Fatal(err)
			}
			want := DequantizeReference(p)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i].Float32()) {
					t.Fatalf("gs %d n %d [%d]: %v, want %v", gs, n, i, got[i], want[i].Float32())
				}
			}
		}
	}
}

func TestDequantizeWordsErrors(t *testing.T) {
	p, err := Pack([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}, 8)
	if err != nil {
		t.Fatal(err)
	}
	mw, ew := Words(p.Mantissas()), Words(p.Exponents())
	for name, f := range map[string]func() error{
		"group size 12": func() error { _, err := DequantizeWords(mw, ew, 9, 12); return err },
		"no values":     func() error { _, err := DequantizeWords(mw, ew, 0, 8); return err },
		"short words":   func() error { _, err := DequantizeWords(mw[:1], ew, 9, 8); return err },
		"bad mantissa":  func() error { _, err := DequantizeWords([]int32{-128, 0, 0}, ew, 9, 8); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
