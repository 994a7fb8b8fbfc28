package perf

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Dur formats a duration with three significant digits (s, ms or µs), as
// the Lab 4 notebook's tables show them.
func Dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.3g µs", float64(d)/1e3)
	}
}

// Percent writes a share as a percentage with two significant digits
// below 10% ("0.31%", "4.2%") and none above ("37%").
func Percent(share float64) string {
	p := 100 * share
	if p < 10 {
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// Median is the median of ds (Summarise's).
func Median(ds []time.Duration) time.Duration { return Summarise(ds).Median }

// Markdown is the comparison as a Markdown table: each mode's first call,
// steady-state statistics and the lab's mean for every n of Iters.
func (c *Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**\n\n| mode | first call | steady mean | median | p5 | p99 |", c.Workload)
	for _, n := range c.Iters {
		fmt.Fprintf(&b, " lab mean, n = %d |", n)
	}
	b.WriteString("\n|---|---|---|---|---|---|" + strings.Repeat("---|", len(c.Iters)) + "\n")
	for _, mt := range c.Modes {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |", mt.Mode, Dur(mt.First), Dur(mt.Steady.Mean), Dur(mt.Steady.Median),
			Dur(mt.Steady.P5), Dur(mt.Steady.P99))
		for _, n := range c.Iters {
			fmt.Fprintf(&b, " %s |", Dur(mt.LabMean[n]))
		}
		b.WriteString("\n")
	}
	if len(c.Modes) > 0 {
		fmt.Fprintf(&b, "\nSteady state: %d calls after a warm-up of %d (the first call is always left out).\n", c.Modes[0].Steady.Calls, c.Warmup)
	}
	return b.String()
}

// LabSpeedup is the lab's figure at its first n (Iters[0], the lab's 5):
// eager's mean over the first n calls over compiled's, the compilation
// included; below 1 compiled looks slower, as in the lab.
func (c *Comparison) LabSpeedup() float64 {
	comp, eager := c.Mode(Compiled), c.Mode(Eager)
	if comp == nil || eager == nil || len(c.Iters) == 0 || comp.LabMean[c.Iters[0]] == 0 {
		return 0
	}
	n := c.Iters[0]
	return float64(eager.LabMean[n]) / float64(comp.LabMean[n])
}

// Findings says in Markdown bullets what the comparison shows about the
// lab's question: the lab's no-warm-up measurement and its verdict, why
// (the first calls against the steady ones), the steady-state speedup, and
// where the curves of the lab's mean over n calls cross (the break-even).
func (c *Comparison) Findings() string {
	comp, eager := c.Mode(Compiled), c.Mode(Eager)
	if comp == nil || eager == nil || len(c.Iters) == 0 {
		return ""
	}
	var b strings.Builder
	n0 := c.Iters[0]
	verdict := "ahead already"
	if comp.LabMean[n0] > eager.LabMean[n0] {
		verdict = "slower, as in the lab"
	}
	fmt.Fprintf(&b, "- **The lab's measurement** (n = %d, no warm-up): compiled %s per call, eager %s: compiled looks %s (%.2f×).\n",
		n0, Dur(comp.LabMean[n0]), Dur(eager.LabMean[n0]), verdict, c.LabSpeedup())
	fmt.Fprintf(&b, "- **Why the first calls are slow**: %s %s\n", firstCallWhy(comp), firstCallWhy(eager))
	fmt.Fprintf(&b, "- **After a warm-up**: compiled %s against eager %s per call (means), a speedup of %.2f× (medians: %.2f×; "+
		"the fastest calls, p5: %.2f×).", Dur(comp.Steady.Mean), Dur(eager.Steady.Mean), c.Speedup,
		float64(eager.Steady.Median)/float64(comp.Steady.Median), float64(eager.Steady.P5)/float64(comp.Steady.P5))
	if c.Speedup < 1 {
		b.WriteString(" Compiled is slower per call in this run. The modes take turns call by call, so a change of load falls on " +
			"both, but other programs running at the same time still blur a small difference; the p5 column, the least disturbed " +
			"calls, is the fairer comparison (or rerun `mase bench compile` with nothing else running).")
	}
	b.WriteString("\n")
	ns, ys := c.Curves()
	last := len(ns) - 1
	aheadAtEnd := ys[Compiled][last] <= ys[Eager][last]
	crossBack := 0
	for i := c.BreakEven; c.BreakEvenMeasured && i <= last; i++ {
		if ys[Compiled][i] > ys[Eager][i] {
			crossBack = i + 1
			break
		}
	}
	switch {
	case c.BreakEven == 0:
		b.WriteString("- **Break-even**: none; compiled is not faster per call in this run, so the compilation is never paid back.\n")
	case !c.BreakEvenMeasured:
		fmt.Fprintf(&b, "- **Break-even**: not within the %d calls timed; from the steady means, at about n = %d.\n", len(comp.Calls), c.BreakEven)
	case crossBack == 0 && c.BreakEven == 1:
		b.WriteString("- **Break-even**: from the first call: compiled's first call, compilation included, took no longer than eager's, " +
			"and compiled stays ahead.\n")
	case crossBack == 0:
		fmt.Fprintf(&b, "- **Break-even**: from n = %d calls, n compiled calls (the compilation included) take no longer than n eager calls, "+
			"where the curves cross: the lab's mean over n calls favours eager below that n and compiled from there on.\n", c.BreakEven)
	default:
		state := "behind"
		if aheadAtEnd {
			state = "ahead again"
		}
		fmt.Fprintf(&b, "- **Break-even**: the curves cross at n = %d (eager's first calls are slow too) but compiled's rises above eager's "+
			"again at n = %d; after %d calls compiled is %s.\n", c.BreakEven, crossBack, len(ns), state)
	}
	return b.String()
}

// firstCallWhy says what one mode's first call spent, from its FirstParts
// when the call was recorded.
func firstCallWhy(mt *ModeTiming) string {
	head := fmt.Sprintf("%s's first call took %s, %.1f× its steady median (%s).", strings.ToUpper(mt.Mode[:1])+mt.Mode[1:],
		Dur(mt.First), float64(mt.First)/float64(max(1, mt.Steady.Median)), Dur(mt.Steady.Median))
	p := mt.FirstParts
	if p == nil {
		return head + " (This runner cannot record its calls, so the first call is not split into its parts.)"
	}
	calls := fmt.Sprintf("the %d calls that built an executable", p.Executables)
	if p.Executables == 1 {
		calls = "the one call that built its executable"
	}
	s := head + fmt.Sprintf(" Of it, %s went into %s (building that stage's GoMLX graph, "+
		"compiling it and running it once; the same stages run in %s in the last call, so building and compiling took about %s)",
		Dur(p.Building), calls, Dur(p.BuiltSteady), Dur(p.Compiling()))
	if p.Executing > 0 {
		s += fmt.Sprintf(", %s into executables already built in the same call", Dur(p.Executing))
	}
	if p.Host > 0 || p.Last.Host > 0 {
		s += fmt.Sprintf(", %s into host kernels (%s in the last call)", Dur(p.Host), Dur(p.Last.Host))
	}
	s += fmt.Sprintf(", and %s into the runner between them: planning its stages for these input shapes, uploading the inputs, "+
		"handing tensors on and bringing the outputs back (%s in the last call).", Dur(p.Rest), Dur(p.Last.Rest))
	return s
}
