package perf

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/timeline"
	"github.com/gomase/gomase/mase/trace"
)

// RecordingRunner is a runner that records its runs on a timeline
// (execute.Eager, execute.Segmented, execute.Compiled).
type RecordingRunner interface {
	execute.Runner
	SetRecorder(*timeline.Recorder)
	Executables() int
}

// NodeCost is what one node computes and moves (see passes' cost
// metadata): FLOPs as PyTorch's FlopCounterMode counts them, element-wise
// FLOPs apart, bytes read and written.
type NodeCost struct {
	Flops, ElementwiseFlops, Bytes int64
}

// StageProfile is one stage of a profiled run: in eager mode a node (and
// the views folded into it), in compiled mode a compiled segment or a
// host kernel.
type StageProfile struct {
	Name             string   `json:"name"`  // the stage's first node
	Op               string   `json:"op"`    // its op and target, e.g. "call_module Linear"
	Nodes            []string `json:"nodes"` // every node the stage ran
	Flops            int64    `json:"flops"`
	ElementwiseFlops int64    `json:"elementwise_flops"`
	Bytes            int64    `json:"bytes"`
	Calls            int      `json:"calls"`  // over the timed runs
	TimeS            float64  `json:"time_s"` // total over the timed runs
	MeanS            float64  `json:"mean_s"` // per call
	Share            float64  `json:"share"`  // of the timed runs' wall time
	GFlopsPerS       float64  `json:"gflops_per_s"`
	GBPerS           float64  `json:"gb_per_s"`
}

// CompileRecord is one executable built during the profile: the stage,
// the input shapes that caused it and the seconds of its first call
// (building, compiling and running it once).
type CompileRecord struct {
	Stage   string  `json:"stage"`
	Shapes  string  `json:"shapes"`
	Seconds float64 `json:"seconds"`
}

// RunProfile is a profile of one runner: the first run (which compiles)
// and Runs timed runs after it.
type RunProfile struct {
	Mode             string  `json:"mode"`
	Workload         string  `json:"workload"`
	Flops            int64   `json:"flops"` // one forward
	ElementwiseFlops int64   `json:"elementwise_flops"`
	Bytes            int64   `json:"bytes"`
	Runs             int     `json:"runs"`
	FirstRunS        float64 `json:"first_run_s"`
	WallS            float64 `json:"wall_s"` // mean of the timed runs
	// MedianS is the median timed run. Profiled runs are recorded span by
	// span, so they may run somewhat slower than an unrecorded steady call
	// (perf.Compare's).
	MedianS     float64         `json:"median_s"`
	Stages      []StageProfile  `json:"nodes"`
	Compiles    []CompileRecord `json:"compiles"`
	Executables int             `json:"executables"`
	// CacheHits counts the executable calls, over every run, that found
	// their executable compiled (shared executables included); the misses
	// are Compiles.
	CacheHits int `json:"cache_hits"`
	// LeafCoverage is the share of the timed runs' span that the leaf
	// spans (executable calls, host kernels) cover: the rest is the
	// runner's own work between calls.
	LeafCoverage float64 `json:"leaf_coverage"`
	// TransferS is the time a timed run spends copying its inputs into
	// the backend's memory (to the GPU on XLA; on the Go backend the
	// inputs stay in its memory after the first run).
	TransferS float64 `json:"transfer_s"`

	rec       *timeline.Recorder
	timedFrom time.Duration
}

// ProfileWarmup is how many untimed runs Profile makes between the first
// run and the timed ones.
const ProfileWarmup = 10

// Profile runs r once (compiling what it needs), ProfileWarmup more times
// untimed, and then runs more times on inputs, recording every span, and
// sums the timed runs' spans by stage. cost
// gives each node's cost (nil: none); graph holds the nodes r runs.
func Profile(workload, mode string, r RecordingRunner, graph *ir.Graph, inputs map[string]*tensors.Tensor, runs int, cost func(*ir.Node) NodeCost) (*RunProfile, error) {
	if runs < 1 || runs > 10000 {
		return nil, fmt.Errorf("perf: %d timed runs (allowed: 1 to 10000)", runs)
	}
	rec := timeline.New()
	r.SetRecorder(rec)
	defer r.SetRecorder(nil)
	p := &RunProfile{Mode: mode, Workload: workload, Runs: runs, rec: rec}
	byName := map[string]*ir.Node{}
	for _, n := range graph.Nodes() {
		byName[n.Name] = n
		if cost != nil {
			c := cost(n)
			p.Flops += c.Flops
			p.ElementwiseFlops += c.ElementwiseFlops
			p.Bytes += c.Bytes
		}
	}
	run := func() (time.Duration, error) {
		start := time.Now()
		outs, err := r.Run(inputs)
		if err != nil {
			return 0, err
		}
		execute.Finalize(outs...)
		return time.Since(start), nil
	}
	first, err := run()
	if err != nil {
		return nil, err
	}
	p.FirstRunS = first.Seconds()
	// The runs right after the first are slower than later ones (the
	// backend's buffers are still being allocated): leave them untimed.
	for range ProfileWarmup {
		if _, err := run(); err != nil {
			return nil, err
		}
	}
	p.timedFrom = rec.Now()
	var total time.Duration
	var each []time.Duration
	for range runs {
		d, err := run()
		if err != nil {
			return nil, err
		}
		total += d
		each = append(each, d)
	}
	p.WallS = total.Seconds() / float64(runs)
	p.MedianS = Median(each).Seconds()
	p.Executables = r.Executables()

	stages := map[string]*StageProfile{}
	var order []string
	var timed []timeline.Event
	for _, e := range rec.Events() {
		switch e.Cat {
		case execute.CatCompile:
			p.Compiles = append(p.Compiles, CompileRecord{Stage: e.Name, Shapes: fmt.Sprint(e.Args["shapes"]), Seconds: e.Dur.Seconds()})
		case execute.CatExecute:
			p.CacheHits++
		}
		if e.Start < p.timedFrom {
			continue
		}
		timed = append(timed, e)
		if e.Cat == execute.CatTransfer {
			p.TransferS += e.Dur.Seconds() / float64(runs)
		}
		if e.Cat != execute.CatExecute && e.Cat != execute.CatHost {
			continue
		}
		sp := stages[e.Name]
		if sp == nil {
			sp = &StageProfile{Name: e.Name, Op: fmt.Sprint(e.Args["label"])}
			if sp.Op == "<nil>" {
				sp.Op = "compiled graph"
			}
			nodes, _ := e.Args["nodes"].([]string)
			if nodes == nil { // the whole graph
				for _, n := range graph.Nodes() {
					nodes = append(nodes, n.Name)
				}
			}
			sp.Nodes = nodes
			for _, name := range nodes {
				if n := byName[name]; n != nil && cost != nil {
					c := cost(n)
					sp.Flops += c.Flops
					sp.ElementwiseFlops += c.ElementwiseFlops
					sp.Bytes += c.Bytes
				}
			}
			stages[e.Name] = sp
			order = append(order, e.Name)
		}
		sp.Calls++
		sp.TimeS += e.Dur.Seconds()
	}
	for _, name := range order {
		sp := stages[name]
		sp.MeanS = sp.TimeS / float64(sp.Calls)
		if total > 0 {
			sp.Share = sp.TimeS / total.Seconds()
		}
		if sp.MeanS > 0 {
			sp.GFlopsPerS = float64(sp.Flops+sp.ElementwiseFlops) / sp.MeanS / 1e9
			sp.GBPerS = float64(sp.Bytes) / sp.MeanS / 1e9
		}
		p.Stages = append(p.Stages, *sp)
	}
	sort.SliceStable(p.Stages, func(i, j int) bool { return p.Stages[i].TimeS > p.Stages[j].TimeS })
	p.LeafCoverage = timeline.LeafCoverage(timed, execute.TrackRun)
	return p, nil
}

// Recorder is the timeline the profile recorded (for WriteChromeTrace).
func (p *RunProfile) Recorder() *timeline.Recorder { return p.rec }

// Format writes the profile as text: the totals, the top stages by time
// (node, op, calls, total and mean time, share, GFLOP/s, GB/s) and the
// compiles.
func (p *RunProfile) Format(w io.Writer, top int) {
	fmt.Fprintf(w, "%s, %s mode: %d timed runs, %.3f ms a run (first run %.1f ms); %.3f GFLOP (+%.3f element-wise), %.1f MB moved; %d executables\n",
		p.Workload, p.Mode, p.Runs, p.WallS*1e3, p.FirstRunS*1e3, float64(p.Flops)/1e9, float64(p.ElementwiseFlops)/1e9, float64(p.Bytes)/1e6, p.Executables)
	fmt.Fprintf(w, "the executable calls, host kernels and input transfers (%.3f ms a run) cover %.0f%% of the timed runs\n\n", p.TransferS*1e3, 100*p.LeafCoverage)
	fmt.Fprintf(w, "%-44s %-28s %6s %10s %10s %6s %9s %8s\n", "node", "op", "calls", "total ms", "mean µs", "share", "GFLOP/s", "GB/s")
	for i, s := range p.Stages {
		if top > 0 && i == top {
			fmt.Fprintf(w, "… %d more\n", len(p.Stages)-top)
			break
		}
		fmt.Fprintf(w, "%-44s %-28s %6d %10.3f %10.1f %5.1f%% %9.2f %8.2f\n", clip(s.Name, 44), clip(s.Op, 28), s.Calls, s.TimeS*1e3, s.MeanS*1e6, 100*s.Share, s.GFlopsPerS, s.GBPerS)
	}
	var secs float64
	for _, c := range p.Compiles {
		secs += c.Seconds
	}
	fmt.Fprintf(w, "\n%d compiles, %.2f s (first calls: build, compile and one run); %d calls found their executable compiled\n", len(p.Compiles), secs, p.CacheHits)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return strings.TrimSpace(s)
}

// TimedFrom is when the timed runs began on the recorder's clock: the
// spans before it are the first run's (compiles).
func (p *RunProfile) TimedFrom() time.Duration { return p.timedFrom }

// Costs annotates mg with every node's cost (passes.InitMetadata, then
// AddCommonMetadata on inputs, which runs the graph once on be to record
// the shapes, then AddCostMetadata) and returns the lookup Profile takes
// and the graph's cost summary.
func Costs(be compute.Backend, mg *ir.MaseGraph, inputs map[string]*tensors.Tensor) (func(*ir.Node) NodeCost, *passes.CostSummary, error) {
	if _, _, err := passes.InitMetadata(mg); err != nil {
		return nil, nil, err
	}
	if _, _, err := passes.AddCommonMetadata(mg, passes.CommonMetadataArgs{DummyIn: inputs, Backend: be}); err != nil {
		return nil, nil, err
	}
	_, info, err := passes.AddCostMetadata(mg, passes.CostArgs{})
	if err != nil {
		return nil, nil, err
	}
	sum, ok := info["summary"].(*passes.CostSummary)
	if !ok {
		return nil, nil, fmt.Errorf("perf: add_cost_metadata returned no summary")
	}
	byName := make(map[string]NodeCost, len(sum.Nodes))
	for _, r := range sum.Nodes {
		byName[r.Name] = NodeCost{Flops: r.FLOPs, ElementwiseFlops: r.ElementwiseFLOPs, Bytes: r.Bytes}
	}
	return func(n *ir.Node) NodeCost { return byName[n.Name] }, sum, nil
}

// ProfileModes profiles m's forward in eager and in compiled mode on be
// (a fresh trace of m with the inputs traced each, its costs counted, one
// run to compile, runs timed runs) and returns both profiles and the cost
// summary of the graph.
func ProfileModes(be compute.Backend, workload string, m *nn.Model, traced []string, inputs map[string]*tensors.Tensor, runs int) (eager, compiled *RunProfile, sum *passes.CostSummary, err error) {
	if eager, sum, _, err = ProfileMode(be, workload, Eager, m, traced, inputs, runs, nil); err != nil {
		return nil, nil, nil, err
	}
	if compiled, _, _, err = ProfileMode(be, workload, Compiled, m, traced, inputs, runs, nil); err != nil {
		return nil, nil, nil, err
	}
	return eager, compiled, sum, nil
}

// ProfileMode profiles m's forward in one mode (Eager or Compiled) on be:
// a fresh trace of m with the inputs traced, compiled mode's rewrites
// applied first (names as compileopt.ParseSelection returns them; nil for
// none: with host kernels, compiled mode runs as segments around them),
// its costs counted, one run to compile, runs timed runs. It returns the
// profile, the cost summary and the rewrites' report.
func ProfileMode(be compute.Backend, workload, mode string, m *nn.Model, traced []string, inputs map[string]*tensors.Tensor, runs int, rewrites []string) (*RunProfile, *passes.CostSummary, *compileopt.Report, error) {
	if mode != Eager && mode != Compiled {
		return nil, nil, nil, fmt.Errorf("perf: mode %q (allowed: %s, %s)", mode, Eager, Compiled)
	}
	g, err := trace.Trace(m, traced)
	if err != nil {
		return nil, nil, nil, err
	}
	mg := &ir.MaseGraph{Model: m, Graph: g}
	rep, err := compileopt.OptimizeFor(be, mg, execute.Mode{}, rewrites)
	if err != nil {
		return nil, nil, nil, err
	}
	cost, sum, err := Costs(be, mg, inputs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("counting the costs: %w", err)
	}
	var r RecordingRunner
	if mode == Eager {
		r, err = execute.NewEagerOn(be, mg, execute.Mode{})
	} else {
		r, err = compiledRecording(be, mg)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	defer r.Close()
	p, err := Profile(workload, mode, r, g, inputs, runs, cost)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, sum, rep, nil
}

// compiledRecording is compiled mode for mg on be (segments around host
// kernels when rewrites put some in) with its timeline recorder.
func compiledRecording(be compute.Backend, mg *ir.MaseGraph) (RecordingRunner, error) {
	r, err := execute.CompileRunner(be, mg, execute.Mode{})
	if err != nil {
		return nil, err
	}
	rr, ok := r.(RecordingRunner)
	if !ok {
		r.Close()
		return nil, fmt.Errorf("internal error: compiled mode's %T records no timeline", r)
	}
	return rr, nil
}

// ProfileFindings says in Markdown what the two profiles of one model
// show (Lab 4's question 1a): how many calls an eager run makes, how much
// of it the largest nodes take, what the dispatch floor (floor: one
// trivial call, DispatchFloor) would cost at that many calls, and what
// the compiled mode removed.
func ProfileFindings(eager, compiled *RunProfile, floor time.Duration) string {
	var calls int
	for _, s := range eager.Stages {
		calls += s.Calls
	}
	perRun := float64(calls) / float64(eager.Runs)
	var b strings.Builder
	fmt.Fprintf(&b, "- **Eager**: %.0f executable calls a run, %.3f ms a run (mean of %d profiled runs after %d untimed ones; median %.3f ms), "+
		"%.2f GFLOP/s over the forward's %.3f GFLOP.", perRun, eager.WallS*1e3, eager.Runs, ProfileWarmup, eager.MedianS*1e3, gflops(eager),
		float64(eager.Flops+eager.ElementwiseFlops)/1e9)
	if n := min(3, len(eager.Stages)); n > 0 {
		var share float64
		var names []string
		for _, s := range eager.Stages[:n] {
			share += s.Share
			names = append(names, fmt.Sprintf("`%s` (%s, %.0f%%)", s.Name, s.Op, 100*s.Share))
		}
		fmt.Fprintf(&b, " The %d largest nodes take %.0f%% of it: %s.", n, 100*share, strings.Join(names, ", "))
	}
	dispatch := 0.0
	if floor > 0 && eager.WallS > 0 {
		dispatch = perRun * floor.Seconds()
		fmt.Fprintf(&b, " At this backend's dispatch floor (%.1f µs a trivial call), the calls alone cost about %.3f ms, %s of the run.",
			float64(floor)/1e3, dispatch*1e3, Percent(math.Min(1, dispatch/eager.WallS)))
	}
	fmt.Fprintf(&b, "\n- **Compiled**: one call, %.3f ms a run (median %.3f ms), %.2f GFLOP/s", compiled.WallS*1e3, compiled.MedianS*1e3, gflops(compiled))
	if compiled.WallS > 0 && eager.WallS > 0 {
		saved := eager.WallS - compiled.WallS
		fmt.Fprintf(&b, ": %.2f× eager, %.3f ms a run less.", eager.WallS/compiled.WallS, saved*1e3)
		if floor > 0 && saved > 0 {
			fmt.Fprintf(&b, " Dispatching the per-node calls accounts for about %.3f ms of that (%s); the rest, %.3f ms, is time the "+
				"nodes' own work takes less as one graph than as separate calls, which this profile does not split further.",
				math.Min(dispatch, saved)*1e3, Percent(math.Min(1, dispatch/saved)), math.Max(0, saved-dispatch)*1e3)
		}
	}
	fmt.Fprintf(&b, "\n- The executable calls and host kernels cover %.0f%% (eager) and %.0f%% (compiled) of the timed runs; the rest is the runner's own work between calls.\n",
		100*eager.LeafCoverage, 100*compiled.LeafCoverage)
	return b.String()
}

func gflops(p *RunProfile) float64 {
	if p.WallS <= 0 {
		return 0
	}
	return float64(p.Flops+p.ElementwiseFlops) / p.WallS / 1e9
}
