package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
)

// maxIntegerTicks is the most labelled ticks integerTicks puts on an axis.
const maxIntegerTicks = 8

// integerTicks is a gplot.Ticker that labels only whole numbers: every 1,
// 2, 5, 10, 20, 50, … units, the smallest of these steps that gives at most
// maxIntegerTicks labels, with unlabelled minor ticks between them at whole
// numbers. A range that holds no whole number gets gonum's default ticks.
type integerTicks struct{}

// Ticks implements gplot.Ticker.
func (integerTicks) Ticks(lo, hi float64) []gplot.Tick {
	first, last := math.Ceil(lo), math.Floor(hi)
	if !(first <= last) || last-first > 1e15 {
		return gplot.DefaultTicks{}.Ticks(lo, hi)
	}
	step, minor := 1.0, 0.0
	for mag := 1.0; ; mag *= 10 {
		done := false
		for _, m := range []float64{1, 2, 5} {
			step = m * mag
			if math.Floor(last/step)-math.Ceil(first/step)+1 <= maxIntegerTicks {
				minor = step / 5
				if m == 2 {
					minor = step / 2
				}
				done = true
				break
			}
		}
		if done {
			break
		}
	}
	var ticks []gplot.Tick
	for k := math.Ceil(first / step); k*step <= last; k++ {
		ticks = append(ticks, gplot.Tick{Value: k * step, Label: formatInteger(k * step)})
	}
	if minor >= 1 {
		for k := math.Ceil(first / minor); k*minor <= last; k++ {
			if v := k * minor; math.Mod(v, step) != 0 {
				ticks = append(ticks, gplot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// formatInteger writes the whole number v in full, 0 without a sign.
func formatInteger(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// isInteger reports whether v is a whole number that a float64 holds
// exactly.
func isInteger(v float64) bool {
	return v == math.Trunc(v) && math.Abs(v) < 1<<53
}

// padRange returns the axis range for data from lo to hi: frac of the span
// more on either side. A range of one value (or one within rounding of
// float64) is first widened to a readable span around it: half a unit on
// either side for an integer axis (one labelled tick), otherwise a tenth of
// the value (or 1 for 0).
func padRange(lo, hi, frac float64, integer bool) (float64, float64) {
	if hi-lo <= 1e-9*max(math.Abs(lo), math.Abs(hi)) {
		mid := lo + (hi-lo)/2
		d := 0.1 * math.Abs(mid)
		switch {
		case integer:
			d = 0.5
		case d == 0:
			d = 1
		}
		lo, hi = mid-d, mid+d
	}
	pad := (hi - lo) * frac
	return lo - pad, hi + pad
}
