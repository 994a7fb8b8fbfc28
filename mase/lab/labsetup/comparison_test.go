package labsetup

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

func TestPerScalePicksTheScalesValue(t *testing.T) {
	for _, sc := range scale.All {
		t.Setenv(scale.Env, string(sc))
		got := PerScale[string]{Quick: "q", Standard: "s", Full: "f"}.Pick()
		if got != string(sc)[:1] {
			t.Errorf("scale %s: Pick() = %q", sc, got)
		}
	}
}

func TestComparisonTable(t *testing.T) {
	t.Setenv(scale.Env, "quick")
	md := Comparison("seeded", []LabFigure{
		{What: "accuracy", Lab: "0.83", Source: "MASE's Tutorial 2", Ours: "0.61", Why: "2,000 sentences | 1 epoch"},
		{What: "parameters", Ours: "4.4 M"},
	})
	for _, want := range []string{"scale: quick", "start: seeded", "| accuracy | 0.83 | MASE's Tutorial 2 | 0.61 | 2,000 sentences \\| 1 epoch |", "| parameters | — | — | 4.4 M | — |"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
}
