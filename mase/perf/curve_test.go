package perf

import (
	"testing"
	"time"
)

func TestLabCurve(t *testing.T) {
	m := ModeTiming{Calls: []time.Duration{90, 30, 30, 10}}
	want := []time.Duration{90, 60, 50, 40}
	got := m.LabCurve()
	if len(got) != len(want) {
		t.Fatalf("curve %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("curve %v, want %v", got, want)
		}
	}
	if len((ModeTiming{}).LabCurve()) != 0 {
		t.Error("empty curve")
	}
}

// TestCurvesCrossAtBreakEven checks that Curves agrees with LabMean and
// that compiled's curve first drops to eager's at the measured break-even.
func TestCurvesCrossAtBreakEven(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	comp := ModeTiming{Mode: Compiled, Calls: ms(100, 10, 10, 10, 10, 10, 10, 10, 10, 10)}
	eager := ModeTiming{Mode: Eager, Calls: ms(30, 20, 20, 20, 20, 20, 20, 20, 20, 20)}
	for _, m := range []*ModeTiming{&comp, &eager} {
		m.Steady = Summarise(m.Calls[1:])
		m.LabMean = map[int]time.Duration{}
		for _, n := range []int{5, 10} {
			var s time.Duration
			for _, d := range m.Calls[:n] {
				s += d
			}
			m.LabMean[n] = s / time.Duration(n)
		}
	}
	c := &Comparison{Modes: []ModeTiming{comp, eager}, Iters: []int{5, 10}}
	c.BreakEven, c.BreakEvenMeasured = breakEven(comp, eager)
	if c.Mode(Eager) == nil || c.Mode(Eager).Mode != Eager || c.Mode("interpreted") != nil {
		t.Fatal("Mode lookup")
	}
	ns, ys := c.Curves()
	if len(ns) != 10 || ns[0] != 1 || ns[9] != 10 || len(ys[Compiled]) != 10 || len(ys[Eager]) != 10 {
		t.Fatalf("curves %v %v", ns, ys)
	}
	for _, m := range c.Modes {
		for n, mean := range m.LabMean {
			if d := ys[m.Mode][n-1] - mean.Seconds(); d > 1e-12 || d < -1e-12 {
				t.Errorf("%s n=%d: curve %g, LabMean %g", m.Mode, n, ys[m.Mode][n-1], mean.Seconds())
			}
		}
	}
	cross := 0
	for i := range ns {
		if ys[Compiled][i] <= ys[Eager][i] {
			cross = i + 1
			break
		}
	}
	if cross != c.BreakEven || !c.BreakEvenMeasured || cross != 8 {
		t.Errorf("curves cross at n = %d, break-even %d (measured %v), want 8", cross, c.BreakEven, c.BreakEvenMeasured)
	}
}
