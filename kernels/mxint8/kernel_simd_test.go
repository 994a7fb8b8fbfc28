//go:build amd64 && goexperiment.simd

package mxint8

import "testing"

// TestKernelLevels runs the bit-exactness checks with the AVX-512 loop
// switched off (the AVX2 loop) and with both off (the scalar loop), so
// every level is tested on a machine that has AVX-512.
func TestKernelLevels(t *testing.T) {
	saved512, saved2 := hasAVX512, hasAVX2
	defer func() { hasAVX512, hasAVX2 = saved512, saved2 }()
	for _, level := range []struct {
		name         string
		avx512, avx2 bool
	}{{"avx512", true, true}, {"avx2", false, true}, {"scalar", false, false}} {
		if (level.avx512 && !saved512) || (level.avx2 && !saved2) {
			t.Logf("%s: not supported by this CPU", level.name)
			continue
		}
		hasAVX512, hasAVX2 = level.avx512, level.avx2
		for _, gs := range GroupSizes {
			for _, n := range []int{16, 31, 64, 4*gs + 24, 6000} {
				p, err := Pack(testValues(n, uint64(3*n+gs)), gs)
				if err != nil {
					t.Fatal(err)
				}
				checkAllEqual(t, p)
			}
			checkAllEqual(t, everyEncoding(t, gs))
		}
	}
}
