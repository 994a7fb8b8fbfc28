package passes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/prune"
	"github.com/gomase/gomase/mase/ops"
)

// Pruning methods, scopes and granularities (MASE's spellings).
const (
	PruneRandom      = prune.MethodRandom // each element pruned with probability sparsity
	PruneL1          = prune.MethodL1     // elements at or below the sparsity quantile of |values| pruned
	PruneLocal       = "local"            // one threshold per module
	PruneGlobal      = "global"           // one threshold over every pruned module
	PruneElementwise = "elementwise"      // the only granularity gomase implements
)

var (
	pruneMethods       = []string{PruneRandom, PruneL1}
	pruneScopes        = []string{PruneLocal, PruneGlobal}
	pruneGranularities = []string{PruneElementwise}
)

// PruneConfig is the "weight" or "activation" entry of a pruning
// configuration (MASE's prune_transform_pass dict).
type PruneConfig struct {
	// Sparsity is the fraction to prune, in [0, 1]. With PruneL1 a
	// sparsity of 0 still prunes the smallest element (the threshold is
	// the minimum and the comparison strict), as in MASE.
	Sparsity float64
	// Layers, when not nil, gives per-module sparsities instead of
	// Sparsity (which must then be 0), keyed by module path (the node's
	// target, e.g. "bert.pooler.dense"); modules not in it are not pruned.
	// Only the local scope allows it.
	Layers map[string]float64
	// Method is "random" or "l1-norm"; empty means random (MASE's default).
	Method string
	// Scope is "local" or "global"; empty means local.
	Scope string
	// Granularity must be "elementwise" (or empty, meaning elementwise).
	Granularity string
}

// PruneArgs configure PruneTransform. A nil entry leaves that part alone
// (MASE requires both keys).
type PruneArgs struct {
	// Weight masks the weights of Linear-like modules, once, at pass time.
	Weight *PruneConfig
	// Activation masks the input of the same modules on every forward.
	Activation *PruneConfig
	// Seed draws the random weight masks (module i of the pruned modules,
	// in graph order, uses the stream (Seed, i)) and seeds the model
	// store's random generator for random activation masks when it has
	// not been seeded yet.
	Seed uint64
}

// PrunedModule is what PruneTransform did to one module.
type PrunedModule struct {
	Node   string `json:"node"`   // graph node name
	Module string `json:"module"` // module path (the node's target)
	Param  string `json:"param"`  // the masked parameter ("weight")
	// WeightMethod is the weight pruning method; empty when weights were
	// not pruned.
	WeightMethod string `json:"weight_method,omitempty"`
	// WeightSparsity is the target.
	WeightSparsity float64 `json:"weight_sparsity"`
	// Threshold is the l1-norm threshold on |W| (NaN for random).
	Threshold float64 `json:"threshold"`
	// Kept and Total count the weight entries the mask keeps; Achieved is
	// 1 − Kept/Total.
	Kept     int     `json:"kept"`
	Total    int     `json:"total"`
	Achieved float64 `json:"achieved_sparsity"`
	// ActivationMethod is the input pruning method; empty when inputs are
	// not pruned.
	ActivationMethod   string  `json:"activation_method,omitempty"`
	ActivationSparsity float64 `json:"activation_sparsity"`
	// ActivationThreshold is the fixed input threshold of global l1-norm
	// (NaN otherwise: local l1 recomputes it on every forward).
	ActivationThreshold float64 `json:"activation_threshold"`
}

// MaskSuffix is appended to a parameter's name to name its pruning mask
// buffer: "classifier.weight" → "classifier.weight_mask".
const MaskSuffix = "_mask"

// PruneTransform prunes the Linear-like modules the graph calls (MASE's
// prune_transform_pass, elementwise granularity):
//
//   - weights: a 0/1 mask per module, computed now from the current
//     effective weight (l1-norm: mask = |W| > t with t the sparsity
//     quantile of |W| — of this module's for local scope, of all pruned
//     modules' concatenated for global scope; random: each entry pruned
//     with probability sparsity), stored as the non-trainable buffer
//     "<module>.weight_mask" and applied by an prune.Mask parametrization, so
//     the effective weight mask ⊙ W stays zero where pruned through
//     fine-tuning. Pruning a module again ANDs the new mask into its
//     existing one.
//   - activations: an prune.SparsifyInput forward pre-hook that masks the
//     module's input on every forward (l1-norm local: the quantile of the
//     live |x|; l1-norm global: one threshold computed now from the
//     inputs AddCommonMetadata recorded with AddValue; random: fresh
//     draws, in eval mode too). It replaces the module's earlier
//     SparsifyInput hook.
//
// A module is Linear-like when its operator (ops.Infer) is "linear" and it
// declares a 2-D parameter named "weight": nn.Linear, a quantized Linear,
// any leaf declaring MaseOp "linear" with that parameter. LoRALinear
// (whose weight is "linear.weight", beside a dense adapter) is not.
// Each pruned module is logged as "Pruning module: <node name>". Compile
// the graph (or create the trainer) after this pass.
func PruneTransform(mg *ir.MaseGraph, args PruneArgs) (*ir.MaseGraph, Info, error) {
	if args.Weight == nil && args.Activation == nil {
		return nil, nil, fmt.Errorf("prune: nothing to do: give a weight and/or an activation configuration")
	}
	targets := prunableModules(mg)
	if len(targets) == 0 {
		return nil, nil, fmt.Errorf("prune: the graph calls no Linear-like module (mase_op linear with a 2-D \"weight\" parameter)")
	}
	var wcfg, acfg PruneConfig
	var err error
	if args.Weight != nil {
		if wcfg, err = args.Weight.normalize("weight", targets); err != nil {
			return nil, nil, err
		}
	}
	if args.Activation != nil {
		if acfg, err = args.Activation.normalize("activation", targets); err != nil {
			return nil, nil, err
		}
	}
	be, err := backend.Default()
	if err != nil {
		return nil, nil, err
	}

	// Everything is computed before the model changes.
	type plan struct {
		target
		mod      PrunedModule
		mask     []float32
		shape    []int
		wPruned  bool
		aPruned  bool
		prevMask *model.Variable
	}
	var plans []*plan
	weights := map[string][]float32{}
	for _, tg := range targets {
		p := &plan{target: tg, mod: PrunedModule{Node: tg.node.Name, Module: tg.path, Param: tg.param, Threshold: math.NaN(), ActivationThreshold: math.NaN()}}
		if args.Weight != nil {
			if s, ok := wcfg.sparsityOf(tg.path); ok {
				p.wPruned, p.mod.WeightMethod, p.mod.WeightSparsity = true, wcfg.Method, s
				vals, dims, err := mg.Model.EffectiveParamData(be, nn.Join(tg.path, tg.param))
				if err != nil {
					return nil, nil, fmt.Errorf("prune: %w", err)
				}
				weights[tg.path], p.shape = vals, dims
			}
		}
		if args.Activation != nil {
			if s, ok := acfg.sparsityOf(tg.path); ok {
				p.aPruned, p.mod.ActivationMethod, p.mod.ActivationSparsity = true, acfg.Method, s
			}
		}
		if p.wPruned || p.aPruned {
			plans = append(plans, p)
		}
	}
	if len(plans) == 0 {
		return nil, nil, fmt.Errorf("prune: no module to prune: the per-layer sparsities name none of the Linear-like modules %s", targetPaths(targets))
	}

	// Weight masks.
	globalT := float32(math.NaN())
	if args.Weight != nil && wcfg.Method == PruneL1 && wcfg.Scope == PruneGlobal {
		var all []float32
		for _, p := range plans {
			if p.wPruned {
				all = append(all, absAll(weights[p.path])...)
			}
		}
		globalT = prune.Quantile(all, wcfg.Sparsity)
	}
	for i, p := range plans {
		if !p.wPruned {
			continue
		}
		w := weights[p.path]
		p.mask = make([]float32, len(w))
		switch wcfg.Method {
		case PruneL1:
			t := globalT
			if wcfg.Scope == PruneLocal {
				t = prune.Quantile(absAll(w), p.mod.WeightSparsity)
			}
			p.mod.Threshold = float64(t)
			for j, v := range w {
				if abs32(v) > t {
					p.mask[j] = 1
				}
			}
		case PruneRandom:
			rng := rand.New(rand.NewPCG(args.Seed, uint64(i)))
			for j := range w {
				if rng.Float64() >= p.mod.WeightSparsity {
					p.mask[j] = 1
				}
			}
		}
		bufName := nn.Join(p.path, p.param+MaskSuffix)
		if v, ok := mg.Model.Buffer(bufName); ok {
			old, err := v.Value()
			if err != nil {
				return nil, nil, fmt.Errorf("prune: reading the mask of %s: %w", p.path, err)
			}
			prev, err := tensors.CopyFlatData[float32](old)
			if err != nil || len(prev) != len(p.mask) {
				return nil, nil, fmt.Errorf("prune: the existing buffer %s is not a float32 mask of %v (%v)", bufName, p.shape, err)
			}
			for j := range p.mask {
				p.mask[j] *= prev[j]
			}
			p.prevMask = v
		}
		for _, v := range p.mask {
			if v != 0 {
				p.mod.Kept++
			}
		}
		p.mod.Total = len(p.mask)
		p.mod.Achieved = 1 - float64(p.mod.Kept)/float64(p.mod.Total)
	}

	// Global l1 activation threshold, from the recorded inputs.
	actT := math.NaN()
	if args.Activation != nil && acfg.Method == PruneL1 && acfg.Scope == PruneGlobal {
		var all []float32
		for _, p := range plans {
			if !p.aPruned {
				continue
			}
			vals, err := recordedInput(p.node)
			if err != nil {
				return nil, nil, fmt.Errorf("prune: global l1-norm activation pruning takes its threshold from the recorded inputs: %w (run InitMetadata and AddCommonMetadata with AddValue: true first)", err)
			}
			all = append(all, absAll(vals)...)
		}
		actT = float64(prune.Quantile(all, acfg.Sparsity))
	}
	if args.Activation != nil && acfg.Method == PruneRandom {
		if v := mg.Model.Store.GetVariable(model.JoinPath("/", model.RNGStateVariableName)); v == nil || !v.HasValue() {
			if err := mg.Model.Store.SetRNGStateFromSeed(int64(args.Seed)); err != nil {
				return nil, nil, fmt.Errorf("prune: seeding the random activation masks: %w", err)
			}
		}
	}

	// Apply.
	var done []PrunedModule
	zeros, total := 0, 0
	for _, p := range plans {
		Logger.Info("Pruning module: " + p.node.Name)
		if p.wPruned {
			maskT := tensors.FromFlatDataAndDimensions(p.mask, p.shape...)
			if p.prevMask != nil {
				if err := p.prevMask.SetValue(maskT); err != nil {
					return nil, nil, fmt.Errorf("prune: %s: %w", p.path, err)
				}
			} else {
				bufName := nn.Join(p.path, p.param+MaskSuffix)
				if _, err := mg.Model.RegisterBuffer(bufName, maskT); err != nil {
					return nil, nil, fmt.Errorf("prune: %w", err)
				}
				if err := mg.Model.RegisterParametrization(p.path, p.param, &prune.Mask{Buffer: bufName}); err != nil {
					return nil, nil, fmt.Errorf("prune: %w", err)
				}
			}
			zeros += p.mod.Total - p.mod.Kept
			total += p.mod.Total
		}
		if p.aPruned {
			hook := &prune.SparsifyInput{Method: acfg.Method, Sparsity: p.mod.ActivationSparsity}
			if !math.IsNaN(actT) {
				t := actT
				hook.Threshold = &t
				p.mod.ActivationThreshold = t
			}
			mg.Model.RemoveForwardPreHooks(p.path, func(h nn.ForwardPreHook) bool { return h.Kind() == prune.SparsifyInputKind })
			if err := mg.Model.RegisterForwardPreHook(p.path, hook); err != nil {
				return nil, nil, fmt.Errorf("prune: %w", err)
			}
		}
		done = append(done, p.mod)
	}
	info := Info{"pruned": done}
	if total > 0 {
		info["weight_zeros"], info["weight_total"] = zeros, total
		info["weight_sparsity"] = float64(zeros) / float64(total)
	}
	return mg, info, nil
}

// target is a Linear-like module called by the graph.
type target struct {
	node  *ir.Node
	path  string
	param string
}

// prunableModules lists the Linear-like modules the graph calls, in graph
// order, each once (at its first call).
func prunableModules(mg *ir.MaseGraph) []target {
	var out []target
	seen := map[string]bool{}
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule || seen[n.Target] {
			continue
		}
		mod, ok := mg.Model.Module(n.Target)
		if !ok {
			continue
		}
		if param, ok := LinearWeight(n, mod); ok {
			seen[n.Target] = true
			out = append(out, target{node: n, path: n.Target, param: param})
		} else {
			Logger.Debug("Not pruning node: " + n.Name)
		}
	}
	return out
}

// LinearWeight returns the name of the weight pruning masks when mod,
// called by node n, is Linear-like: a leaf whose operator (ops.Infer) is
// "linear" and that declares a 2-D parameter "weight".
func LinearWeight(n *ir.Node, mod nn.Module) (string, bool) {
	if _, leaf := mod.(nn.Leaf); !leaf {
		return "", false
	}
	if _, op, err := ops.Infer(n, mod); err != nil || op != "linear" {
		return "", false
	}
	for _, p := range mod.Params() {
		if p.Name == "weight" && len(p.Shape) == 2 {
			return "weight", true
		}
	}
	return "", false
}

func targetPaths(ts []target) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.path)
	}
	return strings.Join(out, ", ")
}

// recordedInput returns the values AddCommonMetadata recorded for a
// node's data_in_0.
func recordedInput(n *ir.Node) ([]float32, error) {
	if n.Meta == nil {
		return nil, fmt.Errorf("node %s has no metadata", n.Name)
	}
	a := n.Meta.Common.Args.Get("data_in_0")
	if a == nil {
		return nil, fmt.Errorf("node %s has no data_in_0 metadata", n.Name)
	}
	t, ok := a.Value.(*tensors.Tensor)
	if !ok || t == nil {
		return nil, fmt.Errorf("node %s has no recorded data_in_0 value", n.Name)
	}
	return tensors.CopyFlatData[float32](t)
}

func abs32(v float32) float32 { return float32(math.Abs(float64(v))) }

func absAll(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = abs32(x)
	}
	return out
}

// normalize fills the defaults and checks c as MASE's loader does; what
// is "weight" or "activation".
func (c *PruneConfig) normalize(what string, targets []target) (PruneConfig, error) {
	out := *c
	if out.Method == "" {
		out.Method = PruneRandom
	}
	if out.Scope == "" {
		out.Scope = PruneLocal
	}
	if out.Granularity == "" {
		out.Granularity = PruneElementwise
	}
	fail := func(format string, a ...any) (PruneConfig, error) {
		return PruneConfig{}, fmt.Errorf("prune: %s: "+format, append([]any{what}, a...)...)
	}
	if !slices.Contains(pruneGranularities, out.Granularity) {
		return fail("Unsupported pruning granularity %s. Please choose from %s (gomase implements elementwise only)", out.Granularity, pyStrings(pruneGranularities))
	}
	if !slices.Contains(pruneScopes, out.Scope) {
		return fail("Unsupported pruning scope %s. Please choose from %s", out.Scope, pyStrings(pruneScopes))
	}
	if !slices.Contains(pruneMethods, out.Method) {
		return fail("Unsupported pruning method %s. Please choose from %s", out.Method, pyStrings(pruneMethods))
	}
	if out.Layers != nil {
		if out.Scope != PruneLocal {
			return fail("Layer-wise budgets only possible with a local scope! (scope is %s)", out.Scope)
		}
		if out.Sparsity != 0 {
			return fail("give either a sparsity or per-layer sparsities, not both (sparsity %v)", out.Sparsity)
		}
		paths := map[string]bool{}
		for _, t := range targets {
			paths[t.path] = true
		}
		for _, k := range slices.Sorted(maps.Keys(out.Layers)) {
			if !paths[k] {
				return fail("Node %s not found in the graph! (the Linear-like modules are: %s)", k, targetPaths(targets))
			}
			if err := checkSparsity(out.Layers[k]); err != nil {
				return fail("%s: %v", k, err)
			}
		}
		return out, nil
	}
	if err := checkSparsity(out.Sparsity); err != nil {
		return fail("%v", err)
	}
	return out, nil
}

// sparsityOf returns the sparsity for the module at path, or false when
// the per-layer sparsities leave it out.
func (c PruneConfig) sparsityOf(path string) (float64, bool) {
	if c.Layers == nil {
		return c.Sparsity, true
	}
	s, ok := c.Layers[path]
	return s, ok
}

func checkSparsity(s float64) error {
	if math.IsNaN(s) || s < 0 || s > 1 {
		return fmt.Errorf("Sparsity must be between 0 and 1. Got %v", s)
	}
	return nil
}

// pyStrings prints a Python list of strings: ['random', 'l1-norm'].
func pyStrings(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = "'" + s + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ParsePruneArgs decodes MASE's pruning configuration dict:
//
//	{"weight":     {"sparsity": 0.5, "method": "l1-norm", "scope": "local"},
//	 "activation": {"sparsity": 0.5, "method": "l1-norm", "scope": "local"}}
//
// Keys: "weight", "activation" (either may be left out) and gomase's
// "seed"; in each entry "sparsity" (a float in [0, 1], or a map from
// module path to such floats), "method", "scope" and "granularity".
// Unknown keys are rejected. As in MASE a sparsity must be a float: an
// integer such as 1 (int, or a JSON number without '.' or exponent) is
// rejected with "Sparsity must be a float". The values are checked again,
// against the graph, by PruneTransform.
func ParsePruneArgs(cfg map[string]any) (PruneArgs, error) {
	var out PruneArgs
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[k]
		switch k {
		case "weight", "activation":
			m, ok := v.(map[string]any)
			if !ok {
				return PruneArgs{}, fmt.Errorf("prune: %q must be a dict of sparsity, method, scope and granularity, got %T", k, v)
			}
			c, err := parsePruneConfig(k, m)
			if err != nil {
				return PruneArgs{}, err
			}
			if k == "weight" {
				out.Weight = c
			} else {
				out.Activation = c
			}
		case "seed":
			n, ok := intValue(v)
			if !ok || n < 0 {
				return PruneArgs{}, fmt.Errorf("prune: seed must be a non-negative integer, got %v (%T)", v, v)
			}
			out.Seed = uint64(n)
		default:
			return PruneArgs{}, fmt.Errorf("prune: unknown key %q (allowed: weight, activation, seed)", k)
		}
	}
	if out.Weight == nil && out.Activation == nil {
		return PruneArgs{}, fmt.Errorf("prune: the configuration has neither a \"weight\" nor an \"activation\" entry")
	}
	return out, nil
}

// PruneArgsFromJSON decodes ParsePruneArgs' dict from JSON, keeping the
// difference between 1 (rejected: not a float) and 1.0.
func PruneArgsFromJSON(data []byte) (PruneArgs, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return PruneArgs{}, fmt.Errorf("prune: decoding the configuration: %w", err)
	}
	return ParsePruneArgs(m)
}

func parsePruneConfig(what string, m map[string]any) (*PruneConfig, error) {
	c := &PruneConfig{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "sparsity":
			if layers, ok := v.(map[string]any); ok {
				c.Layers = map[string]float64{}
				for name, lv := range layers {
					s, err := sparsityValue(lv)
					if err != nil {
						return nil, fmt.Errorf("prune: %s: sparsity of %s: %w", what, name, err)
					}
					c.Layers[name] = s
				}
				continue
			}
			s, err := sparsityValue(v)
			if err != nil {
				return nil, fmt.Errorf("prune: %s: %w", what, err)
			}
			c.Sparsity = s
		case "method", "scope", "granularity":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("prune: %s: %s must be a string, got %v (%T)", what, k, v, v)
			}
			switch k {
			case "method":
				c.Method = s
			case "scope":
				c.Scope = s
			default:
				c.Granularity = s
			}
		default:
			return nil, fmt.Errorf("prune: %s: unknown key %q (allowed: sparsity, method, scope, granularity)", what, k)
		}
	}
	// MASE's loader checks these before the graph is known, too.
	if c.Method != "" && !slices.Contains(pruneMethods, c.Method) {
		return nil, fmt.Errorf("prune: %s: Unsupported pruning method %s. Please choose from %s", what, c.Method, pyStrings(pruneMethods))
	}
	if c.Scope != "" && !slices.Contains(pruneScopes, c.Scope) {
		return nil, fmt.Errorf("prune: %s: Unsupported pruning scope %s. Please choose from %s", what, c.Scope, pyStrings(pruneScopes))
	}
	if c.Granularity != "" && !slices.Contains(pruneGranularities, c.Granularity) {
		return nil, fmt.Errorf("prune: %s: Unsupported pruning granularity %s. Please choose from %s (gomase implements elementwise only)", what, c.Granularity, pyStrings(pruneGranularities))
	}
	if c.Layers != nil && c.Scope == PruneGlobal {
		return nil, fmt.Errorf("prune: %s: Layer-wise budgets only possible with a local scope!", what)
	}
	return c, nil
}

// sparsityValue accepts a float (float64, float32, or a JSON number
// written with '.' or an exponent) in [0, 1].
func sparsityValue(v any) (float64, error) {
	var s float64
	switch x := v.(type) {
	case float64:
		s = x
	case float32:
		s = float64(x)
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return 0, fmt.Errorf("Sparsity must be a float. Got int (%s; write %s.0)", x, x)
		}
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("Sparsity must be a float. Got %q", x)
		}
		s = f
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return 0, fmt.Errorf("Sparsity must be a float. Got int (%v; write %v.0)", x, x)
	default:
		return 0, fmt.Errorf("Sparsity must be a float. Got %T (%v)", v, v)
	}
	if err := checkSparsity(s); err != nil {
		return 0, err
	}
	return s, nil
}

// intValue accepts Go integers, integral floats and JSON integers.
func intValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	case float64:
		return int64(x), x == math.Trunc(x)
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	}
	return 0, false
}

// SparsityRow is one line of ReportWeightSparsity.
type SparsityRow struct {
	Node   string `json:"node"`
	Module string `json:"module"`
	Param  string `json:"param"`
	// Masked says whether the parameter has a parametrization (a pruning
	// mask).
	Masked   bool    `json:"masked"`
	Zeros    int     `json:"zeros"`
	Total    int     `json:"total"`
	Sparsity float64 `json:"sparsity"` // Zeros/Total
}

// ReportWeightSparsity reports, for every Linear-like module the graph
// calls, the zeros of its effective weight (mask ⊙ W for pruned modules):
// the sparsity actually reached, e.g. after pruning and fine-tuning.
// Info holds the totals over those modules: "zeros", "total", "sparsity".
func ReportWeightSparsity(mg *ir.MaseGraph) ([]SparsityRow, Info, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, nil, err
	}
	var rows []SparsityRow
	zeros, total := 0, 0
	for _, tg := range prunableModules(mg) {
		vals, _, err := mg.Model.EffectiveParamData(be, nn.Join(tg.path, tg.param))
		if err != nil {
			return nil, nil, fmt.Errorf("weight sparsity: %w", err)
		}
		r := SparsityRow{Node: tg.node.Name, Module: tg.path, Param: tg.param, Masked: mg.Model.IsParametrized(tg.path, tg.param), Total: len(vals)}
		for _, v := range vals {
			if v == 0 {
				r.Zeros++
			}
		}
		r.Sparsity = float64(r.Zeros) / float64(max(r.Total, 1))
		zeros += r.Zeros
		total += r.Total
		rows = append(rows, r)
	}
	info := Info{"zeros": zeros, "total": total, "sparsity": float64(zeros) / float64(max(total, 1))}
	return rows, info, nil
}

// BakePruneMasks writes every pruning mask into its weight — the stored
// weight becomes mask ⊙ W, so the zeros survive a plain parameter
// checkpoint — and removes the mask parametrizations and buffers (torch's
// remove_parametrizations with leave_parametrized=True). The activation
// hooks are kept. It returns {"baked": [module paths]}; pruned weights no
// longer stay zero in later training.
func BakePruneMasks(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, nil, err
	}
	var baked []string
	for _, tg := range prunableModules(mg) {
		bufName := nn.Join(tg.path, tg.param+MaskSuffix)
		isMask := func(p nn.Parametrization) bool {
			mk, ok := p.(*prune.Mask)
			return ok && mk.Buffer == bufName
		}
		ps := mg.Model.Parametrizations(tg.path, tg.param)
		if !slices.ContainsFunc(ps, isMask) {
			continue
		}
		if len(ps) != 1 {
			return nil, nil, fmt.Errorf("bake prune masks: %s has %d parametrizations besides its mask; remove them first (only a lone mask is baked)", nn.Join(tg.path, tg.param), len(ps)-1)
		}
		if err := mg.Model.BakeParametrizations(be, tg.path, tg.param); err != nil {
			return nil, nil, fmt.Errorf("bake prune masks: %w", err)
		}
		if err := mg.Model.RemoveBuffer(bufName); err != nil {
			return nil, nil, fmt.Errorf("bake prune masks: %w", err)
		}
		baked = append(baked, tg.path)
	}
	return mg, Info{"baked": baked}, nil
}
