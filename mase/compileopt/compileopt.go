// Package compileopt holds compiled mode's graph rewrites: MaseGraph
// passes that run before a graph is compiled, each of which can be
// switched off, so that Lab 4 can show what every one contributes — the
// role of torch.compile's graph-level optimisation.
//
// Two rewrites clean the graph (dead_code, remove_dropout); two swap a
// node for one of our own CPU kernels, run on the host between compiled
// segments (a graph break, execute.HostFunction): sdpa_kernel
// (kernels/sdpa's tiled online-softmax attention) and gelu_kernel
// (kernels/gelu's float32 SIMD GELU; the Go backend's GELU evaluates erf
// in float64 one element at a time); one replaces a packed module's
// in-graph dequantisation: mxint8_kernel (kernels/mxint8's SIMD
// dequantiser on the packed buffers, hoisted to the start of the graph
// since it depends on parameters only, then F.linear). Host kernels have no gradient, so
// the kernel rewrites only apply to inference graphs (Mode.Training
// false).
//
// Eager mode runs the graph as traced; compiled mode runs Optimize's
// result with execute.CompileRunner (see NewCompiled).
package compileopt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/compute"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/passes"
)

// Rewrite is one compiled-mode rewrite: a MaseGraph pass (its Info
// reports passes.Changed), selected by its short name (--rewrites).
type Rewrite struct {
	passes.Pass
	// Host is set for rewrites that insert host kernels (graph breaks);
	// they are skipped for training graphs and off the Go backend.
	Host bool
}

// The rewrites' names, in the order Optimize applies them.
const (
	DeadCode      = "dead_code"
	RemoveDropout = "remove_dropout"
	SDPAKernel    = "sdpa_kernel"
	GELUKernel    = "gelu_kernel"
	MXInt8Kernel  = "mxint8_kernel"
)

// preset is compiled mode's list of passes, in application order, with
// whether each inserts host kernels.
var preset = []struct {
	name string
	host bool
}{{DeadCode, false}, {RemoveDropout, false}, {SDPAKernel, true}, {GELUKernel, true}, {MXInt8Kernel, true}}

// Passes lists the kernel rewrites as passes (the others are package
// passes' own).
func Passes() []passes.Pass {
	return []passes.Pass{
		passes.NoArgs(SDPAKernel+"_transform_pass", "run scaled_dot_product_attention with kernels/sdpa's fused tiled online-softmax kernel (graph break)", counted(sdpaKernel)),
		passes.NoArgs(GELUKernel+"_transform_pass", "run exact GELU with kernels/gelu's float32 SIMD kernel (graph break)", counted(geluKernel)),
		passes.NoArgs(MXInt8Kernel+"_transform_pass", "dequantise QLinearPacked weights with kernels/mxint8's SIMD kernel, hoisted to the start of the graph (graph break), then F.linear", counted(mxint8Kernel)),
	}
}

// Registry is every pass: package passes' and the kernel rewrites. The
// CLI's --pass and Optimize look passes up here.
func Registry() *passes.Registry {
	r := passes.Standard()
	if err := r.Add(Passes()...); err != nil {
		panic("compileopt: " + err.Error())
	}
	return r
}

// counted makes a pass of a rewrite that returns how many nodes it
// changed.
func counted(rewrite func(mg *ir.MaseGraph) (int, error)) func(mg *ir.MaseGraph) (*ir.MaseGraph, passes.Info, error) {
	return func(mg *ir.MaseGraph) (*ir.MaseGraph, passes.Info, error) {
		n, err := rewrite(mg)
		if err != nil {
			return nil, nil, err
		}
		return mg, passes.Info{passes.Changed: n}, nil
	}
}

// Rewrites returns every rewrite, in the order Optimize applies them.
func Rewrites() []Rewrite {
	reg := Registry()
	out := make([]Rewrite, len(preset))
	for i, p := range preset {
		ps, err := reg.Lookup(p.name)
		if err != nil {
			panic("compileopt: " + err.Error())
		}
		out[i] = Rewrite{Pass: ps, Host: p.host}
	}
	return out
}

// Names lists the rewrites' names in order.
func Names() []string {
	var names []string
	for _, p := range preset {
		names = append(names, p.name)
	}
	return names
}

// ParseSelection reads a --rewrites value: "all", "none", or a
// comma-separated list of rewrite names. It returns the selected names in
// application order.
func ParseSelection(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "all", "":
		return Names(), nil
	case "none":
		return nil, nil
	}
	chosen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(Names(), name) {
			return nil, fmt.Errorf("unknown rewrite %q (allowed: all, none, or a comma-separated list of %s)", name, strings.Join(Names(), ", "))
		}
		chosen[name] = true
	}
	var out []string
	for _, name := range Names() {
		if chosen[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// Report says what Optimize did.
type Report struct {
	// Applied maps each rewrite that ran to the number of nodes it changed.
	Applied map[string]int
	// Skipped maps each selected rewrite that did not run to the reason.
	Skipped map[string]string
	// Nodes is the number of graph nodes before and after.
	NodesBefore, NodesAfter int
}

// String is a one-line summary, rewrites in application order.
func (r *Report) String() string {
	var parts []string
	for _, name := range Names() {
		if n, ok := r.Applied[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", name, n))
		} else if why, ok := r.Skipped[name]; ok {
			parts = append(parts, fmt.Sprintf("%s skipped (%s)", name, why))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no rewrites")
	}
	return fmt.Sprintf("%s; %d → %d nodes", strings.Join(parts, ", "), r.NodesBefore, r.NodesAfter)
}

// Optimize applies the selected rewrites (names as ParseSelection returns
// them; nil applies none) to mg in place, in Rewrites order, and checks the
// result. Like MASE's transform passes it changes the graph it is given:
// trace again for an untouched copy.
func Optimize(mg *ir.MaseGraph, mode execute.Mode, selected []string) (*Report, error) {
	g := mg.Graph
	for _, name := range selected {
		if !slices.Contains(Names(), name) {
			return nil, fmt.Errorf("unknown rewrite %q (allowed: %s)", name, strings.Join(Names(), ", "))
		}
	}
	rep := &Report{Applied: map[string]int{}, Skipped: map[string]string{}, NodesBefore: g.Len()}
	for _, r := range Rewrites() {
		name := r.Short()
		if !slices.Contains(selected, name) {
			continue
		}
		if r.Host && mode.Training {
			rep.Skipped[name] = "host kernels have no gradient; training graphs keep the GoMLX op"
			continue
		}
		if name == RemoveDropout && mode.Training {
			rep.Skipped[name] = "dropout is active in training"
			continue
		}
		_, info, err := r.Run(mg, nil)
		if err != nil {
			return nil, fmt.Errorf("rewrite %s: %w", name, err)
		}
		if err := g.Lint(); err != nil {
			return nil, fmt.Errorf("rewrite %s broke the graph: %w", name, err)
		}
		rep.Applied[name], _ = info[passes.Changed].(int)
	}
	rep.NodesAfter = g.Len()
	return rep, nil
}

// NewCompiled is compiled mode with rewrites: it applies the selected
// rewrites to mg (in place, OptimizeFor) and prepares the result with
// execute.CompileRunner on be: one GoMLX computation, or compiled segments
// around the host kernels.
func NewCompiled(be compute.Backend, mg *ir.MaseGraph, mode execute.Mode, selected []string) (execute.Runner, *Report, error) {
	rep, err := OptimizeFor(be, mg, mode, selected)
	if err != nil {
		return nil, nil, err
	}
	r, err := execute.CompileRunner(be, mg, mode)
	if err != nil {
		return nil, nil, err
	}
	return r, rep, nil
}

// OptimizeFor is Optimize for a graph that will run on be. The
// host-kernel rewrites apply on the Go backend only: elsewhere (XLA) the
// backend fuses the GoMLX ops itself, attention included, and a graph
// break would only add transfers; they are reported as skipped.
func OptimizeFor(be compute.Backend, mg *ir.MaseGraph, mode execute.Mode, selected []string) (*Report, error) {
	var kept []string
	skipped := map[string]string{}
	for _, name := range selected {
		if hostRewrite(name) && !backend.IsGo(be) {
			skipped[name] = fmt.Sprintf("host kernels are for the Go backend; %s fuses the GoMLX ops itself", be.Name())
			continue
		}
		kept = append(kept, name)
	}
	rep, err := Optimize(mg, mode, kept)
	if err != nil {
		return nil, err
	}
	for name, why := range skipped {
		rep.Skipped[name] = why
	}
	return rep, nil
}

// hostRewrite reports whether the rewrite called name inserts host
// kernels.
func hostRewrite(name string) bool {
	for _, p := range preset {
		if p.name == name {
			return p.host
		}
	}
	return false
}

// replaceNode puts a new node computing the same value as old right after
// it, moves old's users to it and erases old.
func replaceNode(g *ir.Graph, old *ir.Node, op ir.OpKind, target string, args []any, kwargs map[string]any) (*ir.Node, error) {
	var repl *ir.Node
	err := g.InsertingAfter(old, func() error {
		var err error
		repl, err = g.AddNode(op, old.Name+"_"+strings.TrimPrefix(target, ops.HostPrefix), target, args, kwargs)
		return err
	})
	if err != nil {
		return nil, err
	}
	if _, err := old.ReplaceAllUsesWith(repl); err != nil {
		return nil, err
	}
	return repl, g.EraseNode(old)
}
