package mixedprecision

import (
	"testing"

	"github.com/gomase/gomase/mase/quant"
)

// TestWeightErrors: on bert-tiny's initial weights (normal, σ = 0.02, all
// far below 1), block minifloat's per-block bias, clamped at 0, leaves its
// smallest non-zero step at 2^−2 and zeroes nearly every weight, while block
// log's bias moves its grid down to each block's largest weight.
func TestWeightErrors(t *testing.T) {
	mg := bertGraph(t, 1)
	rs, err := WeightErrors(mg, []string{quant.BlockMinifloat, quant.BlockLog, quant.BlockFP}, 8, 4)
	if err != nil {
		t.Fatal(err)
	}
	bm, bl, bfp := rs[0], rs[1], rs[2]
	t.Logf("%+v", rs)
	if bm.LargestWeight <= 0 || bm.LargestWeight >= 0.25 {
		t.Fatalf("largest initial weight %v, want in (0, 0.25)", bm.LargestWeight)
	}
	if bm.Zeroed != 1 || bm.RelError != 1 {
		t.Errorf("block_minifloat: %.4f of the weights zeroed, error %.3f; want all, 1", bm.Zeroed, bm.RelError)
	}
	if bl.Zeroed > 0.05 || bl.RelError > 0.25 {
		t.Errorf("block_log: %.4f zeroed, error %.3f; want few and under 0.25", bl.Zeroed, bl.RelError)
	}
	if bfp.Zeroed > 0.05 || bfp.RelError > 0.1 {
		t.Errorf("block_fp: %.4f zeroed, error %.3f; want few and under 0.1", bfp.Zeroed, bfp.RelError)
	}
	if _, err := WeightErrors(mg, []string{"nope"}, 8, 4); err == nil {
		t.Error("an unknown format was accepted")
	}
}
