package nas

import (
	"math"

	"github.com/gomase/gomase/mase/search"
)

// Summary is what Lab 2 reports of a study: how many trials completed, the
// best value and its trial, and the mean and population standard
// deviation of the values (Task 2 compares the objectives by their spread).
type Summary struct {
	Complete  int
	Best      float64
	BestTrial int
	Mean, Std float64
}

// Summarize summarises the complete trials of a maximising study (the
// values are NaN and BestTrial −1 when none completed).
func Summarize(trials []search.FrozenTrial) Summary {
	s := Summary{Best: math.NaN(), BestTrial: -1, Mean: math.NaN(), Std: math.NaN()}
	var vals []float64
	for _, t := range trials {
		if t.State != search.Complete {
			continue
		}
		vals = append(vals, t.Value)
		if s.BestTrial < 0 || t.Value > s.Best {
			s.Best, s.BestTrial = t.Value, t.Number
		}
	}
	s.Complete = len(vals)
	if len(vals) == 0 {
		return s
	}
	s.Mean, s.Std = 0, 0
	for _, v := range vals {
		s.Mean += v
	}
	s.Mean /= float64(len(vals))
	for _, v := range vals {
		s.Std += (v - s.Mean) * (v - s.Mean)
	}
	s.Std = math.Sqrt(s.Std / float64(len(vals)))
	return s
}
