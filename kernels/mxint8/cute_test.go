package mxint8

import (
	"slices"
	"testing"
)

// TestCuTeTiling checks the tiling against mase-cuda's table and that the
// threads' partitions cover every element of a tile exactly once, at
// consecutive shared-memory bytes for consecutive threads.
func TestCuTeTiling(t *testing.T) {
	want := map[int][3]int{8: {8, 128, 8}, 32: {32, 32, 32}, 128: {128, 8, 64}, 512: {256, 4, 128}}
	for _, gs := range GroupSizes {
		tl, err := CuTeTiling(gs)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[gs]; ok && (tl.BlkM != w[0] || tl.BlkK != w[1] || tl.ThdM != w[2]) {
			t.Errorf("group %d: tiling %+v, want %v", gs, tl, w)
		}
		seen := make([]int, tl.BlkM*tl.BlkK)
		for th := range tl.Threads() {
			for _, c := range tl.ThreadElements(th) {
				seen[tl.SmemOffset(c[0], c[1])]++
			}
			if th > 0 && th%tl.ThdM != 0 {
				a, b := tl.ThreadElements(th - 1)[0], tl.ThreadElements(th)[0]
				if tl.SmemOffset(b[0], b[1])-tl.SmemOffset(a[0], a[1]) != 1 {
					t.Errorf("group %d: threads %d and %d are not on neighbouring bytes", gs, th-1, th)
				}
			}
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("group %d: shared byte %d covered %d times", gs, i, n)
			}
		}
		if got := tl.Blocks(); (gs == 512) != (got == 2) || got < 1 {
			t.Errorf("group %d: %d blocks", gs, got)
		}
		if g := tl.GlobalOffset(tl.Blocks()-1, 1, tl.BlkM-1, tl.BlkK-1); g != (2*tl.BlkK)*gs-1 {
			t.Errorf("group %d: last element of k-tile 1 at %d", gs, g)
		}
	}
	if _, err := CuTeTiling(24); err == nil {
		t.Error("group 24 has no tiling")
	}
}

// TestEveryEncodingMatchesTests: the exported EveryEncoding is the
// encoding set TestEveryEncoding checks.
func TestEveryEncodingMatchesTests(t *testing.T) {
	for _, gs := range GroupSizes {
		p, err := EveryEncoding(gs)
		if err != nil {
			t.Fatal(err)
		}
		want := everyEncoding(t, gs)
		if !slices.Equal(p.Mantissas(), want.Mantissas()) || !slices.Equal(p.Exponents(), want.Exponents()) {
			t.Errorf("group %d: EveryEncoding differs from the tests' encoding set", gs)
		}
	}
	if _, err := EveryEncoding(24); err == nil {
		t.Error("group 24 accepted")
	}
}
