package execute

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// key returns the cache key of the executable of stage st with module
// plan p for signature sig.
func (s *staged) key(st *stage, p modulePlan, sig string) stageKey {
	switch {
	case st.shared != "":
		return stageKey{shared: st.shared, sig: sig}
	case p.shared != "":
		return stageKey{shared: p.shared, sig: sig}
	}
	return stageKey{stage: st, sig: sig}
}

// executable returns the executable of stage st for input signature sig,
// creating it on first use. Its graph function binds one graph parameter
// per input tensor (nIns of them, in tensorArgs order), then, for a stage
// whose modules share (p.shared), one per module parameter of p.params
// (the modules read them through nn.Call.Params), keeps the constant inputs as they are in vals,
// lowers the stage's nodes in order and returns the tensors of the
// recorded nodes' values.
func (s *staged) executable(st *stage, sig string, vals map[*ir.Node]any, nIns int, p modulePlan) (*stageExec, error) {
	key := s.key(st, p, sig)
	refs, moduleShared, nParams := p.params, p.shared != "", len(p.params)
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.execs[key]; ok {
		return se, nil
	}
	se := &stageExec{}
	inputVals := map[*ir.Node]any{}
	for _, x := range st.external {
		inputVals[x] = vals[x]
	}
	recorded := s.recorded(st)
	fn := func(scope *model.Scope, params []*graph.Node) []*graph.Node {
		g := params[0].Graph()
		k := 0
		bound := map[*tensors.Tensor]*graph.Node{}
		toGraph := func(leaf any) any {
			x, ok := leaf.(*tensors.Tensor)
			if !ok {
				return leaf
			}
			if p, ok := bound[x]; ok {
				return p
			}
			p := params[k]
			k++
			bound[x] = p
			return p
		}
		gvals := Values{}
		for _, x := range st.external {
			gvals[x] = mapLeaves(inputVals[x], toGraph)
		}
		given := map[*ir.Node]map[string]*graph.Node{}
		if moduleShared {
			// Every module of a shared stage reads only what it is given
			// (nothing: a module without parameters).
			for _, n := range st.nodes {
				if n.Op == ir.CallModule {
					given[n] = map[string]*graph.Node{}
				}
			}
		}
		for i, r := range refs {
			if given[r.node] == nil {
				given[r.node] = map[string]*graph.Node{}
			}
			given[r.node][r.name] = params[nIns+i]
		}
		for _, n := range st.nodes {
			v, err := lowerNode(g, scope, s.m, n, gvals, nil, s.mode, given[n])
			if err != nil {
				if len(st.nodes) > 1 {
					err = fmt.Errorf("node %s (%s %s): %w", n.Name, n.Op, n.Target, err)
				}
				panic(err)
			}
			gvals[n] = v
		}
		var outs []*graph.Node
		se.values = make([]any, len(recorded))
		for i, n := range recorded {
			se.values[i] = mapLeaves(gvals[n], func(leaf any) any {
				x, ok := leaf.(*graph.Node)
				if !ok {
					return leaf
				}
				outs = append(outs, x)
				return outputIndex(len(outs) - 1)
			})
		}
		se.nOutputs, se.built = len(outs), true
		paramIndex := map[*graph.Node]int{}
		for i, p := range params[:len(params)-nParams] {
			paramIndex[p] = i // a module parameter is no tensor to hand on
		}
		se.alias = make([]int, len(outs))
		for k, o := range outs {
			i, ok := paramIndex[o]
			if !ok {
				se.alias = nil
				break
			}
			se.alias[k] = i
		}
		if len(outs) == 0 {
			se.alias = nil
			// Only constants: the graph still needs an output; the values
			// are taken from the build, never from the execution.
			outs = append(outs, graph.Scalar(g, dtypes.Float32, 0))
		}
		return outs
	}
	exec, err := model.NewExec(s.be, s.m.Store, fn)
	if err != nil {
		return nil, fmt.Errorf("creating the executor: %w", err)
	}
	se.exec = exec
	s.execs[key] = se
	return se, nil
}

// planModules decides, on a stage's first run, whether a stage with
// modules shares its executable (see Eager), and returns the module
// parameters and buffers it then passes as inputs (nil: none; the stage
// reads its modules' parameters from the store as variables). A module
// shares when it is a leaf that nn.ForwardSignature describes, has no
// parametrization and no forward pre-hook, and, in train mode, no
// buffer (BatchNorm2d updates its running statistics in the store);
// every module of the stage must.
func (s *staged) planModules(st *stage) modulePlan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.planned {
		return modulePlan{st.modShared, st.params}
	}
	st.planned = true
	if !s.shareModules || st.host != nil || st.shared != "" {
		return modulePlan{}
	}
	mods := map[*ir.Node]string{}
	var refs []paramRef
	for _, n := range st.nodes {
		if n.Op != ir.CallModule {
			continue
		}
		desc, nodeRefs, ok := s.describeModule(n)
		if !ok {
			return modulePlan{}
		}
		mods[n] = desc
		refs = append(refs, nodeRefs...)
	}
	if len(mods) == 0 {
		return modulePlan{}
	}
	if d := s.describe(st, mods); d != "" {
		st.modShared, st.params = d, refs
	}
	return modulePlan{st.modShared, st.params}
}

// modulePlan is what planModules decided for a stage: shared describes a
// stage with modules that shares its executable ("" for one that does
// not), params the module parameters and buffers it passes as inputs.
type modulePlan struct {
	shared string
	params []paramRef
}

// describeModule returns the description of call_module node n (its
// configuration and the names of its parameters and buffers) and those
// parameters and buffers, sorted by name; ok is false when the module
// must not share (see planModules).
func (s *staged) describeModule(n *ir.Node) (desc string, refs []paramRef, ok bool) {
	mod, found := s.m.Module(n.Target)
	if !found || n.Target == "" {
		return "", nil, false
	}
	if _, leaf := mod.(nn.Leaf); !leaf {
		return "", nil, false
	}
	sig, ok := nn.ForwardSignature(mod)
	if !ok || s.m.IsParametrized(n.Target, "") || len(s.m.ForwardPreHooks(n.Target)) > 0 {
		return "", nil, false
	}
	// The module's variables are those under its store path: its
	// parameters ("weight", LoRA's "linear.weight") and buffers (declared,
	// registered, packed).
	prefix := nn.StorePath(n.Target) + "/"
	for v := range s.m.Store.IterVariables() {
		rest, under := strings.CutPrefix(v.Path(), prefix)
		if !under {
			continue
		}
		name := strings.ReplaceAll(rest, "/", ".")
		if _, isBuffer := s.m.Buffer(nn.Join(n.Target, name)); isBuffer && s.mode.Training {
			return "", nil, false
		}
		refs = append(refs, paramRef{node: n, name: name, path: v.Path()})
	}
	slices.SortFunc(refs, func(a, b paramRef) int { return strings.Compare(a.name, b.name) })
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.name
	}
	return sig + " params(" + strings.Join(names, ",") + ")", refs, true
}

// paramTensors returns the store's current values of the parameters refs
// (the store's own tensors, passed to the executable as they are: the
// runner neither frees nor copies them) and the signature of their shapes.
func (s *staged) paramTensors(refs []paramRef) ([]*tensors.Tensor, string, error) {
	ts := make([]*tensors.Tensor, len(refs))
	var b strings.Builder
	for i, r := range refs {
		v := s.m.Store.GetVariable(r.path)
		if v == nil {
			return nil, "", fmt.Errorf("module %s: parameter %s is no longer in the model store", r.node.Target, r.name)
		}
		t, err := v.Value()
		if err != nil {
			return nil, "", fmt.Errorf("module %s, parameter %s: %w", r.node.Target, r.name, err)
		}
		ts[i] = t
		b.WriteString(t.Shape().String())
		b.WriteByte(';')
	}
	return ts, b.String(), nil
}

// unshare gives up sharing for stage st, whose shared executable (plan p)
// for signature sig failed to build: it drops that executable and makes
// the stage read its modules' parameters from the store from now on.
func (s *staged) unshare(st *stage, p modulePlan, sig string) {
	key := s.key(st, p, sig)
	s.mu.Lock()
	defer s.mu.Unlock()
	if se, ok := s.execs[key]; ok && !se.built {
		se.exec.Finalize()
		delete(s.execs, key)
	}
	st.modShared, st.params = "", nil
}
