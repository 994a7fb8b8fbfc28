package perf

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/internal/modeltest"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/trace"
)

func TestSummarise(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := Summarise(ds)
	if s.Calls != 100 || s.Mean != 50500*time.Microsecond || s.Median != 50500*time.Microsecond || s.P5 != 5*time.Millisecond || s.P99 != 99*time.Millisecond {
		t.Errorf("stats %+v", s)
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("Summarise reordered its input")
	}
	if (Summarise(nil) != Stats{}) {
		t.Error("empty input")
	}
}

// scripted is a Runner that only counts its calls.
type scripted struct{ calls int }

func (s *scripted) Run(map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	s.calls++
	return []*tensors.Tensor{tensors.FromScalar(float32(1))}, nil
}
func (s *scripted) InputNames() []string { return []string{"x"} }
func (s *scripted) Close()               {}

func TestBreakEven(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	mode := func(calls []time.Duration) ModeTiming {
		return ModeTiming{Calls: calls, Steady: Summarise(calls[1:])}
	}
	// Compiled: 100 then 10 per call; eager: 30 then 20. Sums: 100/30,
	// 110/50, ..., 100+10k vs 30+20k: equal at k = 7, n = 8.
	n, measured := breakEven(mode(ms(100, 10, 10, 10, 10, 10, 10, 10, 10, 10)), mode(ms(30, 20, 20, 20, 20, 20, 20, 20, 20, 20)))
	if n != 8 || !measured {
		t.Errorf("break-even %d measured %v, want 8 measured", n, measured)
	}
	// Only 4 calls run: extrapolated to the same n.
	n, measured = breakEven(mode(ms(100, 10, 10, 10)), mode(ms(30, 20, 20, 20)))
	if n != 8 || measured {
		t.Errorf("extrapolated break-even %d measured %v, want 8", n, measured)
	}
	// Compiled is slower in the steady state too: never.
	if n, _ := breakEven(mode(ms(100, 30, 30)), mode(ms(30, 20, 20))); n != 0 {
		t.Errorf("break-even %d, want 0", n)
	}
}

func TestCompare(t *testing.T) {
	runners := map[string]*scripted{}
	newRunner := func(mode string) (execute.Runner, error) {
		runners[mode] = &scripted{}
		return runners[mode], nil
	}
	c, err := Compare("toy", newRunner, nil, Options{Iters: []int{3, 10}, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if runners[Compiled].calls != 10 || runners[Eager].calls != 10 {
		t.Errorf("calls %d %d, want 10 each", runners[Compiled].calls, runners[Eager].calls)
	}
	for _, m := range c.Modes {
		if len(m.Calls) != 10 || m.Steady.Calls != 8 || len(m.LabMean) != 2 {
			t.Errorf("%s: %d calls, %d steady, lab means %v", m.Mode, len(m.Calls), m.Steady.Calls, m.LabMean)
		}
	}
	if !strings.Contains(c.Format(), "lab n=10") {
		t.Errorf("format:\n%s", c.Format())
	}
	for _, o := range []Options{{Iters: []int{0}}, {Iters: []int{3}, Warmup: 3}, {Iters: []int{3}, Warmup: -1}} {
		if _, err := Compare("toy", newRunner, nil, o); err == nil {
			t.Errorf("options %+v: no error", o)
		}
	}
	failing := func(string) (execute.Runner, error) { return nil, errors.New("no backend") }
	if _, err := Compare("toy", failing, nil, Options{}); err == nil || !strings.Contains(err.Error(), "compiled: no backend") {
		t.Errorf("error %v", err)
	}
}

// logged is a Runner that appends its name to a shared log at each call.
type logged struct {
	name string
	log  *[]string
}

func (l *logged) Run(map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	*l.log = append(*l.log, l.name)
	return []*tensors.Tensor{tensors.FromScalar(float32(1))}, nil
}
func (l *logged) InputNames() []string { return []string{"x"} }
func (l *logged) Close()               {}

func TestTimeInterleavedTakesTurns(t *testing.T) {
	var log []string
	times, err := TimeInterleaved([]execute.Runner{&logged{"a", &log}, &logged{"b", &log}}, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(log, "") != "ababab" || len(times) != 2 || len(times[0]) != 3 || len(times[1]) != 3 {
		t.Errorf("calls %v, times %v: want a and b taking turns, 3 timings each", log, times)
	}
	if _, err := TimeInterleaved([]execute.Runner{&logged{"a", &log}}, nil, 0); err == nil {
		t.Error("no error for 0 calls")
	}
}

// TestCompareSplitsTheFirstCall: on real runners, the first call of each
// mode is split into its parts, which add up to it, and the findings name
// them.
func TestCompareSplitsTheFirstCall(t *testing.T) {
	be := modeltest.Backend(t)
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	newRunner := func(mode string) (execute.Runner, error) {
		mg, err := trace.NewMaseGraph(m, []string{"input_ids"})
		if err != nil {
			return nil, err
		}
		if mode == Compiled {
			r, _, err := compileopt.NewCompiled(be, mg, execute.Mode{}, compileopt.Names())
			return r, err
		}
		return execute.NewEagerOn(be, mg, execute.Mode{})
	}
	ids := tensors.FromFlatDataAndDimensions(make([]int32, 2*16), 2, 16)
	defer ids.FinalizeAll()
	c, err := Compare("bert-tiny 2×16", newRunner, map[string]*tensors.Tensor{"input_ids": ids}, Options{Iters: []int{2, 4}, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range c.Modes {
		p := mt.FirstParts
		if p == nil {
			t.Fatalf("%s: the first call was not split", mt.Mode)
		}
		if p.Total != mt.First || p.Executables < 1 || p.Building <= 0 || p.Building+p.Executing+p.Host+p.Rest != p.Total {
			t.Errorf("%s: parts %+v do not add up to the first call %v", mt.Mode, p, mt.First)
		}
		if p.Last.Total <= 0 || p.BuiltSteady <= 0 {
			t.Errorf("%s: the last call was not recorded: %+v", mt.Mode, p.Last)
		}
	}
	if p := c.Mode(Compiled).FirstParts; p.Host <= 0 {
		t.Errorf("compiled with the kernel rewrites ran no host kernel in its first call: %+v", p)
	}
	if f := c.Findings(); !strings.Contains(f, "calls that built an executable") || !strings.Contains(f, "into host kernels") {
		t.Errorf("findings do not split the first call:\n%s", f)
	}
}

// TestFirstCallOfOneComputation: a runner of one computation records its
// executable call and no run span; its first call is split all the same.
func TestFirstCallOfOneComputation(t *testing.T) {
	ms := time.Millisecond
	first := []timeline.Event{{Cat: execute.CatCompile, Name: "compiled graph", Dur: 90 * ms}}
	last := []timeline.Event{{Cat: execute.CatExecute, Name: "compiled graph", Dur: 10 * ms}}
	p, err := splitFirstCall(first, last)
	if err != nil {
		t.Fatal(err)
	}
	if p.Building != 90*ms || p.BuiltSteady != 10*ms || p.Compiling() != 80*ms || p.Executables != 1 || p.Last.Total != 10*ms {
		t.Errorf("parts %+v", p)
	}
	two := append(slices.Clone(first), timeline.Event{Cat: execute.CatRun}, timeline.Event{Cat: execute.CatRun})
	if _, err := splitFirstCall(two, last); err == nil {
		t.Error("two run spans in one call accepted")
	}
}
