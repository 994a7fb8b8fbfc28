package perf

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/trace"
)

// RunnerTiming is one runner of a rewrite comparison: its median steady
// call and the graph it ran (compileopt's report).
type RunnerTiming struct {
	Name   string        `json:"name"`
	Graph  string        `json:"graph"`
	Median time.Duration `json:"median_ns"`
}

// RewriteAblation is what each compiled-mode rewrite contributes on one
// model: eager as traced, eager on the rewritten graph, compiled with every
// rewrite, with none, and with each one left out (Rewrites).
type RewriteAblation struct {
	Workload string         `json:"workload"`
	Warmup   int            `json:"warmup"`
	Calls    int            `json:"calls"`
	Runners  []RunnerTiming `json:"runners"`
	// LeftOut are the rewrites of the "every rewrite but" rows, in order.
	LeftOut []string `json:"left_out"`
}

// Rewrites times m (traced with the given inputs) as RewriteAblation lists
// its runners, every runner taking turns call by call (TimeInterleaved):
// warm untimed calls, then calls timed ones each. mxint8_kernel is left out
// of the "every rewrite but" rows: it acts on packed layers only (see
// PackedRewrite).
func Rewrites(be compute.Backend, workload string, m *nn.Model, traced []string, inputs map[string]*tensors.Tensor, warm, calls int) (*RewriteAblation, error) {
	a := &RewriteAblation{Workload: workload, Warmup: warm, Calls: calls}
	var runners []execute.Runner
	defer func() {
		for _, r := range runners {
			r.Close()
		}
	}()
	add := func(name string, r execute.Runner, rep *compileopt.Report, err error) error {
		if err != nil {
			return fmt.Errorf("perf: %s: %w", name, err)
		}
		runners = append(runners, r)
		graph := "no rewrites"
		if rep != nil {
			graph = rep.String()
		}
		a.Runners = append(a.Runners, RunnerTiming{Name: name, Graph: graph})
		return nil
	}
	compiled := func(name string, selected []string) error {
		mg, err := trace.NewMaseGraph(m, traced)
		if err != nil {
			return err
		}
		r, rep, err := compileopt.NewCompiled(be, mg, execute.Mode{}, selected)
		return add(name, r, rep, err)
	}
	asTraced, err := trace.NewMaseGraph(m, traced)
	if err != nil {
		return nil, err
	}
	r, err := execute.NewEagerOn(be, asTraced, execute.Mode{})
	if err := add("eager (as traced)", r, nil, err); err != nil {
		return nil, err
	}
	rewritten, err := trace.NewMaseGraph(m, traced)
	if err != nil {
		return nil, err
	}
	rep, err := compileopt.Optimize(rewritten, execute.Mode{}, compileopt.Names())
	if err != nil {
		return nil, err
	}
	r, err = execute.NewEagerOn(be, rewritten, execute.Mode{})
	if err := add("eager on the rewritten graph", r, rep, err); err != nil {
		return nil, err
	}
	if err := compiled("compiled, every rewrite", compileopt.Names()); err != nil {
		return nil, err
	}
	if err := compiled("compiled, no rewrite", nil); err != nil {
		return nil, err
	}
	for _, name := range compileopt.Names() {
		if name == compileopt.MXInt8Kernel {
			continue
		}
		rest := slices.DeleteFunc(compileopt.Names(), func(s string) bool { return s == name })
		if err := compiled("compiled, every rewrite but "+name, rest); err != nil {
			return nil, err
		}
		a.LeftOut = append(a.LeftOut, name)
	}
	times, err := TimeInterleaved(runners, inputs, warm+calls)
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	for i := range a.Runners {
		a.Runners[i].Median = Median(times[i][warm:])
	}
	return a, nil
}

// Speedup is eager's (as traced) median over runner i's.
func (a *RewriteAblation) Speedup(i int) float64 {
	return float64(a.Runners[0].Median) / float64(a.Runners[i].Median)
}

// Markdown is the table of runners: median call, speedup over eager, and
// the graph each ran.
func (a *RewriteAblation) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**: median of %d calls each, after %d warm-up calls, all runners taking turns\n\n", a.Workload, a.Calls, a.Warmup)
	b.WriteString("| runner | median call | speedup over eager | graph |\n|---|---|---|---|\n")
	for i, r := range a.Runners {
		fmt.Fprintf(&b, "| %s | %s | %.2f× | %s |\n", r.Name, Dur(r.Median), a.Speedup(i), r.Graph)
	}
	return b.String()
}

// Bars returns the chart's categories and values: every runner but eager
// as traced, with its speedup over it.
func (a *RewriteAblation) Bars() (names []string, speedups []float64) {
	for i, r := range a.Runners[1:] {
		names = append(names, strings.TrimPrefix(r.Name, "compiled, "))
		speedups = append(speedups, a.Speedup(i+1))
	}
	return names, speedups
}

// SpeedupParts splits compiled mode's speed-up over eager as traced
// (total) into two measured factors whose product it is: rewrites, eager on
// the rewritten graph against eager as traced (the rewrites' kernels, run
// node by node), and compiling, compiled with every rewrite against eager on
// the rewritten graph (the same graph, compiled). plain is compiled with no
// rewrite against eager as traced: compiling alone on the traced graph.
func (a *RewriteAblation) SpeedupParts() (total, rewrites, compiling, plain float64) {
	eagerTraced, eagerRewritten := float64(a.Runners[0].Median), float64(a.Runners[1].Median)
	all, none := float64(a.Runners[2].Median), float64(a.Runners[3].Median)
	return eagerTraced / all, eagerTraced / eagerRewritten, eagerRewritten / all, eagerTraced / none
}

// Findings says what every rewrite together gives against none, how much
// leaving out each one costs, and how compiled mode's lead over eager splits
// into the rewrites' part and compilation's (SpeedupParts).
func (a *RewriteAblation) Findings() string {
	all, none, eagerRewritten := a.Runners[2].Median, a.Runners[3].Median, a.Runners[1].Median
	var b strings.Builder
	fmt.Fprintf(&b, "- Every rewrite: %s per call against %s with none (%.2f×). ", Dur(all), Dur(none), float64(none)/float64(all))
	for i, name := range a.LeftOut {
		without := a.Runners[4+i].Median
		fmt.Fprintf(&b, "Leaving out `%s` changes the time by %+.1f%%. ", name, 100*(float64(without)/float64(all)-1))
	}
	total, rewrites, compiling, plain := a.SpeedupParts()
	fmt.Fprintf(&b, "\n- **Compiled mode's lead over eager, in its parts**: compiled with every rewrite runs %.2f× eager as traced. "+
		"Eager on the rewritten graph (%s: the same kernels, node by node) runs %.2f× eager as traced: that is the rewrites' part. "+
		"Compiling that rewritten graph gives the other %.2f× (%.2f × %.2f = %.2f). Compiling the traced graph without any rewrite "+
		"gives %.2f×.\n", total, Dur(eagerRewritten), rewrites, compiling, rewrites, compiling, rewrites*compiling, plain)
	return b.String()
}

// PackedComparison is bert-tiny-like model with packed Linear layers run
// eager, compiled with the dequantisation inside the graph, and compiled
// with compileopt's mxint8_kernel (the host SIMD dequantiser).
type PackedComparison struct {
	Workload string         `json:"workload"`
	Calls    int            `json:"calls"`
	Runners  []RunnerTiming `json:"runners"`
	Pack     passes.PackReport
}

// PackedRewrite packs m's Linear layers (MXINT8, groupSize; m changes in
// place) and times it eager, compiled without mxint8_kernel and compiled
// with every rewrite, taking turns: warm untimed calls, then calls timed.
func PackedRewrite(be compute.Backend, workload string, m *nn.Model, traced []string, inputs map[string]*tensors.Tensor, groupSize, warm, calls int) (*PackedComparison, error) {
	mg, err := trace.NewMaseGraph(m, traced)
	if err != nil {
		return nil, err
	}
	_, pack, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: groupSize})
	if err != nil {
		return nil, err
	}
	p := &PackedComparison{Workload: workload, Calls: calls, Pack: pack}
	var runners []execute.Runner
	defer func() {
		for _, r := range runners {
			r.Close()
		}
	}()
	eager, err := execute.NewEagerOn(be, mg, execute.Mode{})
	if err != nil {
		return nil, err
	}
	runners = append(runners, eager)
	p.Runners = append(p.Runners, RunnerTiming{Name: "eager (packed modules, graph-op dequantisation)", Graph: "as traced"})
	others := slices.DeleteFunc(compileopt.Names(), func(s string) bool { return s == compileopt.MXInt8Kernel })
	for _, c := range []struct {
		name     string
		selected []string
	}{
		{"compiled, dequantisation inside the graph", others},
		{"compiled, `mxint8_kernel` (host SIMD dequantisation, one graph break per layer)", compileopt.Names()},
	} {
		g, err := trace.NewMaseGraph(m, traced)
		if err != nil {
			return nil, err
		}
		r, rep, err := compileopt.NewCompiled(be, g, execute.Mode{}, c.selected)
		if err != nil {
			return nil, err
		}
		runners = append(runners, r)
		p.Runners = append(p.Runners, RunnerTiming{Name: c.name, Graph: rep.String()})
	}
	times, err := TimeInterleaved(runners, inputs, warm+calls)
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	for i := range p.Runners {
		p.Runners[i].Median = Median(times[i][warm:])
	}
	return p, nil
}

// Markdown is the table of the three runners and what the host
// dequantiser saves or costs against the in-graph one.
func (p *PackedComparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**, medians of %d calls\n\n| runner | median call | graph |\n|---|---|---|\n", p.Workload, p.Calls)
	for _, r := range p.Runners {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Name, Dur(r.Median), r.Graph)
	}
	without, with := p.Runners[1].Median, p.Runners[2].Median
	b.WriteString("\n")
	if with < without {
		fmt.Fprintf(&b, "The host dequantiser saves %s per call over the in-graph one (%.2f×).", Dur(without-with), float64(without)/float64(with))
	} else {
		fmt.Fprintf(&b, "The host dequantiser costs %s more per call than the in-graph one (%.2f×).", Dur(with-without), float64(with)/float64(without))
	}
	return b.String()
}
