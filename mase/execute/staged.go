package execute

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/timeline"
)

// staged runs a MaseGraph as a sequence of stages, materialising the
// tensors that pass between them. A stage is either a run of consecutive
// nodes lowered together into one GoMLX executable (compiled the first
// time the stage meets a set of input shapes, then cached) or a single
// node run on the host by a host kernel (ops.HostKernel). Eager is the case of one node
// per stage; Segmented groups every run of nodes between host nodes.
type staged struct {
	graph  *ir.Graph
	m      *nn.Model
	mode   Mode
	be     compute.Backend
	inputs []string
	stages []*stage
	// shareModules lets stages with modules share executables (Eager):
	// see planModules.
	shareModules bool

	// returned holds the nodes the output node returns: their tensors
	// must be a stage's own outputs, never an input handed on.
	returned map[*ir.Node]bool

	mu    sync.Mutex
	execs map[stageKey]*stageExec
	last  RunStats           // the counts of the most recent Run that completed
	rec   *timeline.Recorder // nil: not profiling (SetRecorder)
}

// RunStats counts what one Run of a staged runner (Eager, Segmented) did:
// what the device time of a small graph is made of, since every
// executable call costs a fixed dispatch on top of its kernels.
type RunStats struct {
	// Stages is the number of stages of the plan: host nodes and groups of
	// nodes lowered together.
	Stages int
	// Executed counts the executable calls the Run made.
	Executed int
	// Constant counts the stages whose values are all Go constants (shape
	// arithmetic): worked out once per input shapes, never executed.
	Constant int
	// Aliased counts the stages that hand on their input tensors unchanged
	// (eval-mode dropout, to() to the tensor's own dtype, contiguous(), a
	// tuple's element): not executed, as PyTorch launches no kernel for
	// them.
	Aliased int
	// Host counts the host stages (ops.HostKernel) the Run ran as Go code.
	Host int
	// Executables is the number of executables compiled so far, over all
	// runs (one per stage and input signature).
	Executables int
	// ExecutedNodes counts the executed stages by their first node, as
	// "call_module Linear", "call_method view", "call_function add" (a
	// stage that folds views into their producer is named after the
	// producer).
	ExecutedNodes map[string]int
}

// Stats returns the counts of the most recent Run that completed (zero
// before the first).
func (s *staged) Stats() RunStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.last
	st.ExecutedNodes = maps.Clone(st.ExecutedNodes)
	return st
}

// label names a stage after its first node: its op and target, with a
// module's class instead of its path.
func (s *staged) label(st *stage) string {
	n := st.nodes[0]
	if n.Op == ir.CallModule {
		if mod, ok := s.m.Module(n.Target); ok {
			return string(n.Op) + " " + mod.TypeName()
		}
	}
	return string(n.Op) + " " + n.Target
}

// stage is one step of a staged run.
type stage struct {
	nodes []*ir.Node
	host  ops.HostKernel // non-nil: nodes is one call_function run on the host
	// external lists the nodes outside the stage whose values it reads, in
	// the order of first use; liveOut the stage's nodes read after it.
	external []*ir.Node
	liveOut  []*ir.Node
	// dead lists the nodes whose values nothing reads after this stage
	// (and the output does not return): Run frees their tensors then.
	dead []*ir.Node
	// shared, when not empty, describes a stage of functions and methods
	// only (no module, no parameter): stages with the same description
	// and input signature lower to the same graph and share one
	// executable.
	shared string
	// planned is set once planModules has looked at the stage (on its
	// first run, under staged.mu). modShared then describes a stage with
	// modules that shares its executable with the stages of the same
	// description and input signature, params listing the module
	// parameters and buffers it passes as the executable's inputs after
	// its tensor inputs; modShared is "" for a stage that does not share.
	planned   bool
	modShared string
	params    []paramRef
}

// paramRef is a parameter or buffer of a module of a stage: the module's
// node, the name within the module ("weight") and the store variable.
type paramRef struct {
	node *ir.Node
	name string
	path string // the variable's path in the store
}

// stageKey identifies a stage's executable: the stage (or the description
// of a stage that shares its executable) and its input signature (the
// shapes of its tensor inputs, the values of its constant ones).
type stageKey struct {
	stage  *stage
	shared string
	sig    string
}

// stageExec is the executable of one stage for one input signature, with
// what its build produced.
type stageExec struct {
	exec *model.Exec
	// values holds, per liveOut node, its value with every tensor replaced
	// by its outputIndex; nOutputs counts them (0: only constants).
	values   []any
	nOutputs int
	built    bool
	// alias holds, when every output is one of the executable's tensor
	// inputs returned unchanged, the input index of each output; nil
	// otherwise.
	alias []int
}

// outputIndex marks the place of the k-th flat output inside a value.
type outputIndex int

// newStaged checks mg and splits its nodes (placeholders and the output
// aside) into stages with split, which returns the groups in graph order.
func newStaged(be compute.Backend, mg *ir.MaseGraph, mode Mode, split func(nodes []*ir.Node) [][]*ir.Node) (*staged, error) {
	m, ig := mg.Model, mg.Graph
	if err := ig.Lint(); err != nil {
		return nil, err
	}
	s := &staged{graph: ig, m: m, mode: mode, be: be, execs: map[stageKey]*stageExec{}}
	var body []*ir.Node
	for _, n := range ig.Nodes() {
		switch n.Op {
		case ir.Placeholder:
			s.inputs = append(s.inputs, n.Target)
		case ir.Output:
		default:
			body = append(body, n)
		}
	}
	if len(s.inputs) == 0 {
		return nil, fmt.Errorf("graph has no placeholder inputs")
	}
	for _, group := range split(body) {
		st := &stage{nodes: group}
		if len(group) == 1 && group[0].Op == ir.CallFunction {
			if op, ok := ops.Lookup(ir.CallFunction, group[0].Target); ok {
				st.host = op.Host
			}
		}
		in := map[*ir.Node]bool{}
		for _, n := range group {
			in[n] = true
		}
		seen := map[*ir.Node]bool{}
		for _, n := range group {
			for _, x := range n.Inputs() {
				if !in[x] && !seen[x] {
					seen[x] = true
					st.external = append(st.external, x)
				}
			}
			for _, u := range n.Users() {
				if !in[u] {
					st.liveOut = append(st.liveOut, n)
					break
				}
			}
		}
		s.stages = append(s.stages, st)
	}
	for _, st := range s.stages {
		if st.host == nil {
			st.shared = s.describe(st, nil)
		}
	}
	s.planRelease()
	return s, nil
}

// describe returns what a stage computes, independent of which nodes feed
// it, when it holds only call_function and call_method nodes (their
// lowering reads no parameters) and the call_module nodes that mods
// describes: each node's kind, target (for a module, its description in
// mods), arguments and keyword arguments with every node replaced by its
// place (the stage's k-th external input, or its own j-th node), and the
// recorded nodes. It returns "" for a stage holding anything else.
func (s *staged) describe(st *stage, mods map[*ir.Node]string) string {
	place := map[*ir.Node]string{}
	for k, x := range st.external {
		place[x] = fmt.Sprintf("in%d", k)
	}
	for j, n := range st.nodes {
		if _, ok := mods[n]; !(ok && n.Op == ir.CallModule) && n.Op != ir.CallFunction && n.Op != ir.CallMethod {
			return ""
		}
		place[n] = fmt.Sprintf("n%d", j)
	}
	var b strings.Builder
	var leaf func(v any)
	leaf = func(v any) {
		switch x := v.(type) {
		case *ir.Node:
			b.WriteString(place[x])
		case []any:
			b.WriteByte('[')
			for _, e := range x {
				leaf(e)
				b.WriteByte(',')
			}
			b.WriteByte(']')
		default:
			// The type tells 2 from 2.0; pointers (a slice's bounds) print
			// as addresses, so such stages never share.
			fmt.Fprintf(&b, "%T(%#v)", x, x)
		}
	}
	for _, n := range st.nodes {
		target := n.Target
		if n.Op == ir.CallModule {
			target = mods[n]
		}
		fmt.Fprintf(&b, "%s %s(", n.Op, target)
		for _, a := range n.Args() {
			leaf(a)
			b.WriteByte(',')
		}
		kw := n.Kwargs()
		for _, k := range slices.Sorted(maps.Keys(kw)) {
			fmt.Fprintf(&b, "%s=", k)
			leaf(kw[k])
			b.WriteByte(',')
		}
		b.WriteString(");")
	}
	b.WriteString("->")
	for _, n := range s.recorded(st) {
		b.WriteString(place[n] + ",")
	}
	return b.String()
}

// planRelease fills each stage's dead list: a value dies after the last
// stage that reads it, or after its own stage when no stage reads it,
// unless the output node returns it.
func (s *staged) planRelease() {
	returned := map[*ir.Node]bool{}
	if out := s.graph.OutputNode(); out != nil {
		for _, x := range out.Inputs() {
			returned[x] = true
		}
	}
	s.returned = returned
	last := map[*ir.Node]int{}
	for i, st := range s.stages {
		for _, n := range s.recorded(st) {
			last[n] = i
		}
		for _, x := range st.external {
			if x.Op != ir.Placeholder {
				last[x] = i
			}
		}
	}
	for n, i := range last {
		if !returned[n] {
			s.stages[i].dead = append(s.stages[i].dead, n)
		}
	}
}

// isHostNode reports whether n runs on the host.
func isHostNode(n *ir.Node) bool {
	if n.Op != ir.CallFunction {
		return false
	}
	op, ok := ops.Lookup(ir.CallFunction, n.Target)
	return ok && op.Host != nil
}

// InputNames returns the graph's inputs.
func (s *staged) InputNames() []string { return append([]string(nil), s.inputs...) }

// Close frees every stage's executables. The runner must not be used after.
func (s *staged) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, se := range s.execs {
		se.exec.Finalize()
		delete(s.execs, k)
	}
}

// Run executes the stages in order and returns the output tensors (one,
// or one per element of an output tuple).
func (s *staged) Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	if err := checkNoExtraInputs(inputs, s.inputs); err != nil {
		return nil, err
	}
	out := s.graph.OutputNode()
	if out == nil {
		return nil, fmt.Errorf("graph has no output node")
	}
	vals := map[*ir.Node]any{}
	var given []*tensors.Tensor
	var args []any
	for _, p := range s.graph.Placeholders() {
		t, ok := inputs[p.Target]
		if !ok {
			return nil, fmt.Errorf("missing input %q (the graph takes %v)", p.Target, s.inputs)
		}
		vals[p] = t
		given, args = append(given, t), append(args, t)
	}
	defer FreeUploads(args...)()
	held := newHeldTensors(given)
	stats := RunStats{Stages: len(s.stages), ExecutedNodes: map[string]int{}}
	tl := s.recorder()
	defer tl.Begin(TrackRun, CatRun, "Run", map[string]any{"stages": len(s.stages)})(nil)
	if err := upload(s.be, tl, args); err != nil {
		return nil, err
	}
	for _, st := range s.stages {
		if err := s.runStage(st, vals, &stats, tl); err != nil {
			held.releaseAll()
			return nil, err
		}
		for _, n := range s.recorded(st) {
			held.hold(vals[n])
		}
		for _, n := range st.dead {
			held.drop(vals[n])
			delete(vals, n)
		}
	}
	outs, err := flattenOutput(resolveArg(out.Args()[0], vals))
	if err == nil {
		s.mu.Lock()
		stats.Executables = len(s.execs)
		s.last = stats
		s.mu.Unlock()
	}
	return outs, err
}

// runStage runs one stage and records the values of its liveOut nodes
// (for a one-node stage, the node's value even when nothing reads it).
func (s *staged) runStage(st *stage, vals map[*ir.Node]any, stats *RunStats, tl *timeline.Recorder) error {
	start := tl.Now()
	if st.host != nil {
		stats.Host++
		n := st.nodes[0]
		args := make([]any, 0, len(n.Args()))
		for _, a := range n.Args() {
			args = append(args, resolveArg(a, vals))
		}
		kwargs := map[string]any{}
		for k, v := range n.Kwargs() {
			kwargs[k] = resolveArg(v, vals)
		}
		v, err := st.host(args, kwargs)
		if err != nil {
			return fmt.Errorf("node %s (host function %s): %w", n.Name, n.Target, err)
		}
		vals[n] = v
		s.stageSpan(tl, st, CatHost, start, "")
		return nil
	}
	ins, sig := tensorArgs(st.external, vals)
	nIns := len(ins)
	plan := s.planModules(st)
	if len(plan.params) > 0 {
		ps, psig, err := s.paramTensors(plan.params)
		if err != nil {
			return s.stageError(st, err)
		}
		ins, sig = append(ins, ps...), sig+"|"+psig
	}
	se, err := s.executable(st, sig, vals, nIns, plan)
	if err != nil {
		return s.stageError(st, err)
	}
	if se.built && se.alias != nil && s.canAlias(st, se, nIns) {
		stats.Aliased++
		outs := make([]*tensors.Tensor, len(se.alias))
		for k, i := range se.alias {
			outs[k] = ins[i]
		}
		for i, n := range s.recorded(st) {
			vals[n] = fillOutputs(se.values[i], outs)
		}
		return nil
	}
	if !se.built || se.nOutputs > 0 {
		compiling := !se.built
		args := make([]any, len(ins))
		for i, t := range ins {
			args[i] = t
		}
		if len(args) == 0 {
			dummy := tensors.FromScalar(float32(0))
			defer Finalize(dummy)
			args = []any{dummy}
		}
		outs, err := se.exec.Call(args...)
		if err != nil && plan.shared != "" && !se.built {
			// A shared build failed (a module reading something it was
			// not given, updating a buffer): the stage gets its own
			// executable, its parameters the store's variables.
			s.unshare(st, plan, sig)
			return s.runStage(st, vals, stats, tl)
		}
		if err != nil {
			return s.stageError(st, err)
		}
		stats.Executed++
		stats.ExecutedNodes[s.label(st)]++
		if compiling {
			s.stageSpan(tl, st, CatCompile, start, argShapes(args))
		} else {
			s.stageSpan(tl, st, CatExecute, start, "")
		}
		if !se.built {
			Finalize(outs...)
			return s.stageError(st, fmt.Errorf("internal error: the executable was not built"))
		}
		if len(outs) < se.nOutputs {
			Finalize(outs...)
			return s.stageError(st, fmt.Errorf("got %d outputs, want %d", len(outs), se.nOutputs))
		}
		Finalize(outs[se.nOutputs:]...) // the placeholder output of a constants-only stage
		for i, n := range s.recorded(st) {
			vals[n] = fillOutputs(se.values[i], outs)
		}
		return nil
	}
	stats.Constant++
	for i, n := range s.recorded(st) {
		vals[n] = se.values[i] // constants: nothing to execute
	}
	return nil
}

// canAlias reports whether a stage whose executable returns its inputs
// unchanged may hand them on without running: none of its values is
// returned by the graph (the caller owns what Run returns, so those must
// be fresh tensors) and every aliased input is a real tensor input (not
// the placeholder argument of a stage without tensor inputs).
func (s *staged) canAlias(st *stage, se *stageExec, nIns int) bool {
	for _, n := range s.recorded(st) {
		if s.returned[n] {
			return false
		}
	}
	for _, i := range se.alias {
		if i >= nIns {
			return false
		}
	}
	return true
}

// recorded lists the nodes whose values a stage hands on: its liveOut
// nodes, or its only node.
func (s *staged) recorded(st *stage) []*ir.Node {
	if len(st.nodes) == 1 {
		return st.nodes
	}
	return st.liveOut
}

// stageError names the stage's node (one node) or its node range.
func (s *staged) stageError(st *stage, err error) error {
	first := st.nodes[0]
	if len(st.nodes) == 1 {
		return fmt.Errorf("node %s (%s %s): %w", first.Name, first.Op, first.Target, err)
	}
	return fmt.Errorf("segment %s … %s (%d nodes): %w", first.Name, st.nodes[len(st.nodes)-1].Name, len(st.nodes), err)
}

// flattenOutput turns the output node's value into its tensors.
func flattenOutput(v any) ([]*tensors.Tensor, error) {
	switch x := v.(type) {
	case *tensors.Tensor:
		return []*tensors.Tensor{x}, nil
	case []any:
		out := make([]*tensors.Tensor, len(x))
		for i, e := range x {
			t, ok := e.(*tensors.Tensor)
			if !ok {
				return nil, fmt.Errorf("output %d is %T, not a tensor", i, e)
			}
			out[i] = t
		}
		return out, nil
	}
	return nil, fmt.Errorf("graph output is %T, want a tensor or a tuple of tensors", v)
}

// tensorArgs collects the tensors inside the values of nodes, in a fixed
// order without repeats, and the signature of their shapes and of the
// constants around them.
func tensorArgs(nodes []*ir.Node, vals map[*ir.Node]any) (ts []*tensors.Tensor, sig string) {
	var b strings.Builder
	seen := map[*tensors.Tensor]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case *tensors.Tensor:
			if !seen[x] {
				seen[x] = true
				ts = append(ts, x)
				b.WriteString(x.Shape().String())
				b.WriteByte(';')
			}
		case []any:
			b.WriteByte('(')
			for _, e := range x {
				walk(e)
			}
			b.WriteByte(')')
		default:
			fmt.Fprintf(&b, "%v;", x)
		}
	}
	for _, in := range nodes {
		walk(vals[in])
	}
	return ts, b.String()
}

// mapLeaves returns v with every leaf (anything but a []any tuple,
// which is copied element by element) replaced by f(leaf).
func mapLeaves(v any, f func(leaf any) any) any {
	if x, ok := v.([]any); ok {
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapLeaves(e, f)
		}
		return out
	}
	return f(v)
}

// fillOutputs replaces every outputIndex in value by its tensor.
func fillOutputs(value any, outs []*tensors.Tensor) any {
	return mapLeaves(value, func(leaf any) any {
		if k, ok := leaf.(outputIndex); ok {
			return outs[k]
		}
		return leaf
	})
}
