// Package perf times gomase's execution modes the way Lab 4 does: the
// same MaseGraph run compiled (one GoMLX computation, JIT-compiled once
// per input shape: torch.compile's analog) and eager (node by node, every
// intermediate materialised: PyTorch eager's analog).
//
// Every call is timed on its own, so one run of n calls gives the lab's
// figure (the mean over the first n calls, the first one paying the
// compilation, no warm-up: time_model), the first call alone, and the
// steady state after a warm-up (mean, median, 5th and 99th percentiles).
// Durations are formatted with github.com/janpfeifer/go-benchmarks'
// PrettyPrint; its benchmark runner is not used because v0.1.1 only
// prints its statistics, and the lab's figures need the individual calls.
package perf

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	benchmarks "github.com/janpfeifer/go-benchmarks"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/execute"
)

// Modes of execution.
const (
	Compiled = "compiled"
	Eager    = "eager"
)

// Stats summarises steady-state call times.
type Stats struct {
	Calls  int           `json:"calls"`
	Mean   time.Duration `json:"mean_ns"`
	Median time.Duration `json:"median_ns"`
	P5     time.Duration `json:"p5_ns"`
	P99    time.Duration `json:"p99_ns"`
}

// Summarise computes Stats over durations (exact order statistics, the
// nearest-rank percentile).
func Summarise(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[max(0, min(len(s)-1, i))]
	}
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stats{Calls: len(s), Mean: sum / time.Duration(len(s)), Median: median, P5: rank(5), P99: rank(99)}
}

// ModeTiming is what one mode measured.
type ModeTiming struct {
	Mode string `json:"mode"`
	// First is the first call: building and compiling, then running.
	First time.Duration `json:"first_call_ns"`
	// Steady is over the calls after the warm-up.
	Steady Stats `json:"steady"`
	// LabMean maps n to the mean of the first n calls (the lab's
	// time_model: no warm-up, the first call included).
	LabMean map[int]time.Duration `json:"lab_mean_ns"`
	// Calls are every call's duration, in order.
	Calls []time.Duration `json:"-"`
	// FirstParts splits the first call (nil when the runner cannot record
	// its calls on a timeline).
	FirstParts *FirstCallParts `json:"first_call_parts,omitempty"`
}

// Comparison is compiled vs eager on one workload.
type Comparison struct {
	Workload string       `json:"workload"`
	Warmup   int          `json:"warmup"`
	Iters    []int        `json:"iters"`
	Modes    []ModeTiming `json:"modes"`
	// Speedup is eager's steady mean over compiled's.
	Speedup float64 `json:"steady_speedup"`
	// BreakEven is the smallest n at which n compiled calls, the first
	// included, take no longer than n eager calls; measured when it
	// falls within the run, else extrapolated from the first calls and
	// the steady means (0 when compiled never catches up).
	BreakEven         int  `json:"break_even_n"`
	BreakEvenMeasured bool `json:"break_even_measured"`
	// MedianSpeedup is eager's steady median over compiled's (less
	// sensitive to a busy machine than the means).
	MedianSpeedup float64 `json:"steady_median_speedup"`
	// DispatchFloor is what one call of a trivial executable costs on the
	// backend (see DispatchFloor; 0 when not measured): eager mode pays it
	// once per node, compiled mode once per segment.
	DispatchFloor time.Duration `json:"dispatch_floor_ns,omitempty"`
	// Notes are lines the caller adds (how compiled mode was configured).
	Notes []string `json:"notes,omitempty"`
}

// Options configure Compare.
type Options struct {
	// Iters are the n of the lab's figure; the run makes max(Iters) calls
	// per mode (default 5, 50, 200).
	Iters []int
	// Warmup calls are left out of the steady-state statistics (default 5;
	// the first call is always left out).
	Warmup int
	// Progress, when set, is told each mode and its number of calls
	// before the timing starts.
	Progress func(mode string, calls int)
}

// Compare runs newRunner's runner for each mode max(Iters) times on
// inputs, timing every call. newRunner builds a fresh runner (nothing
// compiled yet). The modes take turns call by call (see TimeInterleaved),
// so that a change of load on a shared machine falls on both.
func Compare(workload string, newRunner func(mode string) (execute.Runner, error), inputs map[string]*tensors.Tensor, o Options) (*Comparison, error) {
	if len(o.Iters) == 0 {
		o.Iters = []int{5, 50, 200}
	}
	if o.Warmup == 0 {
		o.Warmup = 5
	}
	for _, n := range o.Iters {
		if n < 1 {
			return nil, fmt.Errorf("perf: iteration count %d is not positive", n)
		}
	}
	if o.Warmup < 0 {
		return nil, fmt.Errorf("perf: warm-up %d is negative", o.Warmup)
	}
	calls := slices.Max(o.Iters)
	if calls <= o.Warmup {
		return nil, fmt.Errorf("perf: %d calls leave nothing after a warm-up of %d; raise the largest iteration count or lower the warm-up", calls, o.Warmup)
	}
	c := &Comparison{Workload: workload, Warmup: o.Warmup, Iters: slices.Sorted(slices.Values(o.Iters))}
	modes := []string{Compiled, Eager}
	runners := make([]execute.Runner, 0, len(modes))
	defer func() {
		for _, r := range runners {
			r.Close()
		}
	}()
	for _, mode := range modes {
		r, err := newRunner(mode)
		if err != nil {
			return nil, fmt.Errorf("perf: %s: %w", mode, err)
		}
		runners = append(runners, r)
	}
	if o.Progress != nil {
		for _, mode := range modes {
			o.Progress(mode, calls)
		}
	}
	hooks := make([]func(int), len(runners))
	splits := make([]func() (*FirstCallParts, error), len(runners))
	for i, r := range runners {
		hooks[i], splits[i] = recordFirstAndLast(r, calls)
	}
	times, err := timeInterleaved(runners, inputs, calls, hooks)
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	for i, mode := range modes {
		mt := ModeTiming{Mode: mode, LabMean: map[int]time.Duration{}, Calls: times[i]}
		mt.First = mt.Calls[0]
		if splits[i] != nil {
			p, err := splits[i]()
			if err != nil {
				return nil, fmt.Errorf("perf: %s: %w", mode, err)
			}
			// The timed call also brought its outputs to the host: the rest
			// is counted against the time the lab's figure uses.
			p.Total = mt.First
			p.Rest = max(0, p.Total-p.Building-p.Executing-p.Host)
			mt.FirstParts = p
		}
		mt.Steady = Summarise(mt.Calls[max(1, o.Warmup):])
		for _, n := range c.Iters {
			var sum time.Duration
			for _, d := range mt.Calls[:n] {
				sum += d
			}
			mt.LabMean[n] = sum / time.Duration(n)
		}
		c.Modes = append(c.Modes, mt)
	}
	comp, eager := c.Modes[0], c.Modes[1]
	if comp.Steady.Mean > 0 {
		c.Speedup = float64(eager.Steady.Mean) / float64(comp.Steady.Mean)
	}
	if comp.Steady.Median > 0 {
		c.MedianSpeedup = float64(eager.Steady.Median) / float64(comp.Steady.Median)
	}
	c.BreakEven, c.BreakEvenMeasured = breakEven(comp, eager)
	return c, nil
}

// breakEven finds the smallest n with Σ compiled[:n] ≤ Σ eager[:n].
func breakEven(comp, eager ModeTiming) (int, bool) {
	var sc, se time.Duration
	for i := range min(len(comp.Calls), len(eager.Calls)) {
		sc += comp.Calls[i]
		se += eager.Calls[i]
		if sc <= se {
			return i + 1, true
		}
	}
	// Extrapolate: compiled catches up by (eager − compiled) steady mean
	// per call.
	gain := eager.Steady.Mean - comp.Steady.Mean
	if gain <= 0 {
		return 0, false
	}
	n := len(comp.Calls)
	deficit := sc - se
	return n + int(math.Ceil(float64(deficit)/float64(gain))), false
}

// Format is the comparison as a text table, durations pretty-printed.
func (c *Comparison) Format() string {
	var b strings.Builder
	pp := benchmarks.PrettyPrint
	fmt.Fprintf(&b, "%s\n", c.Workload)
	fmt.Fprintf(&b, "%-9s %12s %12s %12s %12s %12s", "mode", "first call", "mean", "median", "p5", "p99")
	for _, n := range c.Iters {
		fmt.Fprintf(&b, " %12s", fmt.Sprintf("lab n=%d", n))
	}
	b.WriteString("\n")
	for _, m := range c.Modes {
		fmt.Fprintf(&b, "%-9s %12s %12s %12s %12s %12s", m.Mode, pp(m.First), pp(m.Steady.Mean), pp(m.Steady.Median), pp(m.Steady.P5), pp(m.Steady.P99))
		keys := make([]int, 0, len(m.LabMean))
		for n := range m.LabMean {
			keys = append(keys, n)
		}
		sort.Ints(keys)
		for _, n := range keys {
			fmt.Fprintf(&b, " %12s", pp(m.LabMean[n]))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "steady-state speedup (eager mean / compiled mean): %.2f× (medians: %.2f×), over %d calls after a warm-up of %d\n", c.Speedup, c.MedianSpeedup, c.Modes[0].Steady.Calls, c.Warmup)
	switch {
	case c.BreakEven == 0:
		b.WriteString("break-even: compiled never catches up with eager\n")
	case c.BreakEvenMeasured:
		fmt.Fprintf(&b, "break-even: from n = %d calls, compiled (compile included) is ahead\n", c.BreakEven)
	default:
		fmt.Fprintf(&b, "break-even: about n = %d calls (extrapolated from the steady means)\n", c.BreakEven)
	}
	if c.DispatchFloor > 0 {
		fmt.Fprintf(&b, "dispatch floor (one call of a trivial executable): %s per call\n", pp(c.DispatchFloor))
	}
	for _, note := range c.Notes {
		fmt.Fprintf(&b, "%s\n", note)
	}
	return b.String()
}

// TimeInterleaved calls each runner calls times on inputs, the runners
// taking turns (call i of every runner, then call i+1), and returns every
// call's duration per runner. Each call's outputs are brought to the host
// (MaterializeLocal), as the lab's CPU timing does (on the Go backend that
// costs nothing), and freed after the timing. Put the inputs on the device
// first (as PyTorch timings keep theirs on the GPU): inputs still on the
// host are uploaded, and freed again, by every call.
func TimeInterleaved(runners []execute.Runner, inputs map[string]*tensors.Tensor, calls int) ([][]time.Duration, error) {
	return timeInterleaved(runners, inputs, calls, nil)
}

// timeInterleaved is TimeInterleaved calling before[k](i), when set, just
// before runner k's call i (untimed).
func timeInterleaved(runners []execute.Runner, inputs map[string]*tensors.Tensor, calls int, before []func(call int)) ([][]time.Duration, error) {
	if calls < 1 {
		return nil, fmt.Errorf("%d calls: want at least one", calls)
	}
	times := make([][]time.Duration, len(runners))
	for i := 0; i < calls; i++ {
		for k, r := range runners {
			if k < len(before) && before[k] != nil {
				before[k](i)
			}
			start := time.Now()
			outs, err := r.Run(inputs)
			if err == nil {
				for _, t := range outs {
					t.MaterializeLocal()
				}
			}
			d := time.Since(start)
			if err != nil {
				return nil, fmt.Errorf("runner %d, call %d: %w", k, i, err)
			}
			execute.Finalize(outs...)
			times[k] = append(times[k], d)
		}
	}
	return times, nil
}
