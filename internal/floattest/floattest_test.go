package floattest

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRandomStartsWithSpecials(t *testing.T) {
	v := Random(len(specialBits)+5, rand.New(rand.NewPCG(1, 2)))
	bits := Bits(v)
	if len(v) != len(specialBits)+5 || !slices.Equal(bits[:len(specialBits)], specialBits) {
		t.Fatalf("bits %x, want %x first", bits, specialBits)
	}
	b := Bytes(v)
	for i, want := range bits {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != want {
			t.Fatalf("Bytes: element %d is %#x, want %#x", i, got, want)
		}
	}
}
