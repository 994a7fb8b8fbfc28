package nas

import (
	"math"
	"testing"

	"github.com/gomase/gomase/mase/search"
)

func TestSummarize(t *testing.T) {
	ts := []search.FrozenTrial{
		{Number: 0, State: search.Complete, Value: 0.5},
		{Number: 1, State: search.Fail},
		{Number: 2, State: search.Complete, Value: 0.7},
		{Number: 3, State: search.Complete, Value: 0.6},
	}
	s := Summarize(ts)
	if s.Complete != 3 || s.Best != 0.7 || s.BestTrial != 2 || math.Abs(s.Mean-0.6) > 1e-12 || math.Abs(s.Std-math.Sqrt(0.02/3)) > 1e-12 {
		t.Errorf("Summarize = %+v", s)
	}
	if s := Summarize(ts[1:2]); s.Complete != 0 || s.BestTrial != -1 || !math.IsNaN(s.Best) || !math.IsNaN(s.Mean) {
		t.Errorf("no complete trial: %+v", s)
	}
}
