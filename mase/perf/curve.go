package perf

import "time"

// LabCurve is the lab's figure for every n from 1 to the number of calls
// run: element n−1 is the mean of the first n calls (time_model(n): the
// first call, which compiles, included; no warm-up). LabMean holds the same
// means at the chosen Iters only.
func (m ModeTiming) LabCurve() []time.Duration {
	out := make([]time.Duration, len(m.Calls))
	var sum time.Duration
	for i, d := range m.Calls {
		sum += d
		out[i] = sum / time.Duration(i+1)
	}
	return out
}

// Mode returns the timing of the named mode (Compiled or Eager), or nil
// when the comparison has none.
func (c *Comparison) Mode(name string) *ModeTiming {
	for i := range c.Modes {
		if c.Modes[i].Mode == name {
			return &c.Modes[i]
		}
	}
	return nil
}

// Curves returns n = 1..calls and, per mode, the lab's mean over the first
// n calls in seconds: the x and y of the lab's figure. Compiled's curve
// starts above eager's (it pays the compilation) and, when compiled is
// faster per call, falls below it at BreakEven (when measured): n compiled
// calls take no longer than n eager calls exactly where their means cross.
func (c *Comparison) Curves() (ns []float64, seconds map[string][]float64) {
	seconds = map[string][]float64{}
	calls := 0
	for _, m := range c.Modes {
		curve := m.LabCurve()
		ys := make([]float64, len(curve))
		for i, d := range curve {
			ys[i] = d.Seconds()
		}
		seconds[m.Mode] = ys
		calls = max(calls, len(curve))
	}
	ns = make([]float64, calls)
	for i := range ns {
		ns[i] = float64(i + 1)
	}
	return ns, seconds
}
