package compress

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/passes"
)

func TestWidthFindings(t *testing.T) {
	// This run's sweep from a standard-scale Lab 1 (872 test sentences).
	points := []WidthPoint{{4, 2, 0.4908, 0.4908}, {6, 3, 0.4908, 0.6812}, {8, 4, 0.6628, 0.6961}, {12, 6, 0.6743, 0.6732},
		{16, 8, 0.6732, 0.6743}, {24, 12, 0.6743, 0.6800}, {32, 16, 0.6743, 0.6789}}
	md := WidthFindings(points, points[2], 0.6743, 872)
	for _, want := range []string{
		"±1.6 points", "higher at width(s) 6;", "level within the sampling error at 4, 8, 12, 16, 24 and 32; lower at none",
		"**At chance** (both no better than guessing, 0.50): width(s) 4.",
		"width(s) 8, 12, 16, 24 and 32.", // level with the baseline
		"Width(s) 6 (0.6812), 12 (0.6732), 16 (0.6743), 24 (0.6800) and 32 (0.6789) come within the sampling error",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("findings lack %q:\n%s", want, md)
		}
	}
	if WidthFindings(nil, WidthPoint{}, 0.5, 872) != "" {
		t.Error("findings of no points")
	}
}

func TestSparsityFindings(t *testing.T) {
	var points []SparsityPoint
	for _, p := range []struct{ sp, random, l1 float64 }{{0.3, 0.7087, 0.7041}, {0.5, 0.6674, 0.7167}, {0.7, 0.5080, 0.7099}, {0.9, 0.4908, 0.6938}} {
		points = append(points, SparsityPoint{Sparsity: p.sp, Method: passes.PruneRandom, FineTuned: p.random},
			SparsityPoint{Sparsity: p.sp, Method: passes.PruneL1, FineTuned: p.l1})
	}
	md := SparsityFindings(points, 872)
	for _, want := range []string{"higher at sparsity 0.5, 0.7 and 0.9; level within the sampling error at 0.3; lower at none",
		"random pruning at sparsity 0.7 and 0.9; L1-norm at none"} {
		if !strings.Contains(md, want) {
			t.Errorf("findings lack %q:\n%s", want, md)
		}
	}
}
