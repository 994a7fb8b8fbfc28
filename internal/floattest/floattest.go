// Package floattest gives tests float32 values for checking that a store
// keeps values bit-exactly: the special bit patterns (signed zeros,
// infinities, NaN payloads, subnormals), random bit patterns after them,
// and helpers to compare and encode them.
package floattest

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// specialBits are float32 bit patterns a lossless store must keep exactly.
var specialBits = []uint32{
	0x00000000, 0x80000000, // +0, -0
	0x7f800000, 0xff800000, // ±Inf
	0x7fc00000, 0xffc00000, 0x7fc00001, 0x7fa00000, 0x7f800001, 0xffffffff, // NaNs: quiet, signalling, payloads
	0x00000001, 0x807fffff, // subnormals
	0x7f7fffff, 0xff7fffff, // ±MaxFloat32
	0x3f800000, // 1
}

// Random returns n float32 values with random bit patterns, the special
// ones first.
func Random(n int, rng *rand.Rand) []float32 {
	out := make([]float32, n)
	for i := range out {
		if i < len(specialBits) {
			out[i] = math.Float32frombits(specialBits[i])
		} else {
			out[i] = math.Float32frombits(rng.Uint32())
		}
	}
	return out
}

// Bits returns the bit patterns of v, for comparisons that NaNs do not
// spoil.
func Bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

// Bytes encodes v little-endian, as safetensors and torch.save store F32
// data.
func Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}
