package passes

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/quant"
)

// QuantizeTransform is MASE's quantize_transform_pass: every node whose
// config (see QuantizeArgs) names a format is replaced by its quantized
// version. Linear modules (and already quantized Linears, re-quantized
// from their float weights) become a quantized.Linear of the format —
// LinearInteger, LinearMinifloatIEEE, ... — holding the same weight and
// bias, and the node's metadata type/precision are updated for its data
// input, weight, bias (and output when data_out is quantized).
//
// Differences from MASE: the args are never modified (MASE pops "by");
// every config is checked before the graph changes, so an error leaves the
// graph as it was; the bias is kept for every format; a config for an op
// gomase does not quantize (add, matmul, gelu, ...) is an error instead of
// a silent skip. A LoRALinear must be fused (FuseLoRA) first.
//
// Activations: a relu or leaky_relu node (function, method or module)
// whose config is a fixed-point one (name "integer" or "fixed") gets the
// fixed-point type and [width, frac_width] precision on its data_in_0
// (data_in_width, data_in_frac_width) and data_out_0 (data_out_width,
// data_out_frac_width when given, else data_in's), as MASE's
// update_quant_meta_param writes them for relu; its other config keys
// (weight_*, bias_*, floor) are ignored, so the lab's by-type default
// config covers fc1 and relu alike. Unlike MASE, which swaps in
// relu_integer (round to the input format, then ReLU), the float
// computation is left as it is: the activation's format is metadata for
// the hardware path (AddHardwareMetadata), whose bit-exact model is
// package rtl's. A non-fixed-point format for an activation is an error.
//
// It returns {"quantized": [module paths], "types": {class: count}}.
func QuantizeTransform(mg *ir.MaseGraph, args QuantizeArgs) (*ir.MaseGraph, Info, error) {
	if err := args.Validate(); err != nil {
		return nil, nil, err
	}
	type job struct {
		node   *ir.Node
		module *quantized.Linear
		config quant.LinearConfig
	}
	var jobs []job
	var acts []activationJob
	done := map[string]bool{}
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule && n.Op != ir.CallFunction {
			continue
		}
		mod := mustModule(mg, n)
		op, err := nodeOp(n, mod)
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: %w", err)
		}
		if !slices.Contains(QuantizeableOps, op) {
			continue
		}
		key, cfg := args.forNode(op, n.Name)
		format, _ := formatName(cfg)
		if format == "" {
			continue
		}
		if slices.Contains(quantizedActivations, op) {
			aj, err := parseActivationConfig(n, op, key, format, cfg)
			if err != nil {
				return nil, nil, fmt.Errorf("quantize: %w", err)
			}
			acts = append(acts, aj)
			continue
		}
		if n.Op != ir.CallModule || op != "linear" {
			return nil, nil, fmt.Errorf("quantize: node %s (op %s) gets entry %q with format %q, but gomase quantizes only linear modules and relu/leaky_relu activations "+
				"(give that entry the name None, or restrict it with by: name / regex_name)", n.Name, op, key, format)
		}
		if done[n.Target] {
			continue
		}
		in, out, bias, err := linearShape(n, mod)
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: %w", err)
		}
		lc, err := quant.ParseLinearConfig(cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: node %s (entry %q): %w", n.Name, key, err)
		}
		qm, err := quantized.NewLinear(in, out, bias, lc)
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: node %s (entry %q): %w", n.Name, key, err)
		}
		done[n.Target] = true
		jobs = append(jobs, job{node: n, module: qm, config: lc})
	}
	var quantized []string
	types := map[string]int{}
	for _, j := range jobs {
		n := j.node
		values, err := copyParams(mg.Model, n.Target, map[string]string{"weight": "weight", "bias": "bias"})
		if err != nil {
			return nil, nil, fmt.Errorf("quantize: %w", err)
		}
		if err := mg.Model.ReplaceModule(n.Target, j.module, values, 0); err != nil {
			return nil, nil, fmt.Errorf("quantize: %w", err)
		}
		setQuantMeta(n, j.config)
		Logger.Info(fmt.Sprintf("Quantized node %s (%s) as %s.", n.Name, n.Target, j.module.TypeName()))
		quantized = append(quantized, n.Target)
		types[j.module.TypeName()]++
	}
	var activations []string
	for _, a := range acts {
		a.apply()
		Logger.Info(fmt.Sprintf("Quantized activation %s (%s) to fixed point %v -> %v.", a.node.Name, a.op, a.in, a.out))
		activations = append(activations, a.node.Name)
	}
	return mg, Info{"quantized": quantized, "types": types, "activations": activations}, nil
}

// quantizedActivations are the activation ops QuantizeTransform gives a
// fixed-point format (metadata only; see QuantizeTransform).
var quantizedActivations = []string{"relu", "leaky_relu"}

// activationJob is the fixed-point format of one activation node.
type activationJob struct {
	node    *ir.Node
	op      string
	typ     string
	in, out []int
}

// apply writes the format into the node's common metadata.
func (a activationJob) apply() {
	if a.node.Meta == nil {
		return
	}
	if d := a.node.Meta.Common.Args.Get("data_in_0"); d != nil {
		d.Type, d.Precision = a.typ, slices.Clone(a.in)
	}
	if d := a.node.Meta.Common.Results.Get("data_out_0"); d != nil {
		d.Type, d.Precision = a.typ, slices.Clone(a.out)
	}
}

// parseActivationConfig reads the fixed-point format of a relu/leaky_relu
// node from its config: data_in_width and data_in_frac_width (required),
// data_out_width and data_out_frac_width (optional, together).
func parseActivationConfig(n *ir.Node, op, key, format string, cfg map[string]any) (activationJob, error) {
	if format != quant.Integer && format != quant.Fixed {
		return activationJob{}, fmt.Errorf("node %s (op %s) gets entry %q with format %q, but gomase quantizes activations only to fixed point "+
			"(name integer or fixed; give that entry the name None, or restrict it with by: name / regex_name)", n.Name, op, key, format)
	}
	get := func(k string) (int, bool, error) {
		v, ok := cfg[k]
		if !ok || v == nil {
			return 0, false, nil
		}
		var i int
		switch x := v.(type) {
		case int:
			i = x
		case int64:
			i = int(x)
		case float64:
			if x != float64(int(x)) {
				return 0, true, fmt.Errorf("node %s (entry %q): %s is %v, want an integer", n.Name, key, k, v)
			}
			i = int(x)
		default:
			return 0, true, fmt.Errorf("node %s (entry %q): %s is %T, want an integer", n.Name, key, k, v)
		}
		return i, true, nil
	}
	pair := func(prefix string, required bool) ([]int, error) {
		w, okW, err := get(prefix + "_width")
		if err != nil {
			return nil, err
		}
		f, okF, err := get(prefix + "_frac_width")
		if err != nil {
			return nil, err
		}
		if !okW && !okF && !required {
			return nil, nil
		}
		if !okW || !okF {
			return nil, fmt.Errorf("node %s (op %s, entry %q): a fixed-point activation needs %s_width and %s_frac_width", n.Name, op, key, prefix, prefix)
		}
		if w < 1 || w > 64 || f < 0 || f >= w {
			return nil, fmt.Errorf("node %s (op %s, entry %q): %s_width %d, %s_frac_width %d (allowed: 1 ≤ width ≤ 64, 0 ≤ frac_width < width)",
				n.Name, op, key, prefix, w, prefix, f)
		}
		return []int{w, f}, nil
	}
	in, err := pair("data_in", true)
	if err != nil {
		return activationJob{}, err
	}
	out, err := pair("data_out", false)
	if err != nil {
		return activationJob{}, err
	}
	if out == nil {
		out = in
	}
	return activationJob{node: n, op: op, typ: format, in: in, out: out}, nil
}

// nodeOp is the node's mase_op: from its metadata when present, else
// inferred as AddCommonMetadata would.
func nodeOp(n *ir.Node, mod nn.Module) (string, error) {
	if n.Meta != nil && n.Meta.Common.MaseOp != "" {
		return n.Meta.Common.MaseOp, nil
	}
	_, op, err := ops.Infer(n, mod)
	return op, err
}

// linearShape returns the features and bias of a Linear-like module that
// can be quantized.
func linearShape(n *ir.Node, mod nn.Module) (in, out int, bias bool, err error) {
	switch l := mod.(type) {
	case *nn.Linear:
		return l.InFeatures, l.OutFeatures, l.Bias, nil
	case *quantized.Linear:
		return l.InFeatures, l.OutFeatures, l.Bias, nil
	case *nn.LoRALinear:
		return 0, 0, false, fmt.Errorf("node %s is a LoRALinear: fuse the adapters first (FuseLoRA), then quantize", n.Name)
	}
	return 0, 0, false, fmt.Errorf("node %s: module %s (%s) is a linear op but not a Linear gomase can quantize (Linear, a quantized Linear)",
		n.Name, n.Target, mod.TypeName())
}

// setQuantMeta rewrites the type and precision of the quantized arguments
// and result in the node's common metadata (MASE's update_quant_meta_param).
func setQuantMeta(n *ir.Node, cfg quant.LinearConfig) {
	if n.Meta == nil {
		return
	}
	set := func(m *ir.ArgMap, name string, s *quant.Spec) {
		if m == nil || s == nil {
			return
		}
		if a := m.Get(name); a != nil {
			a.Type, a.Precision = s.MetaType(), precisionInts(*s)
		}
	}
	set(n.Meta.Common.Args, "data_in_0", cfg.DataIn)
	set(n.Meta.Common.Args, "weight", cfg.Weight)
	set(n.Meta.Common.Args, "bias", cfg.Bias)
	set(n.Meta.Common.Results, "data_out_0", cfg.DataOut)
}

// QuantizeSummaryRow counts the call_module nodes of one mase_op by
// module class (MASE's quantize_summary_analysis_pass table).
type QuantizeSummaryRow struct {
	Op     string         `json:"op"`
	Total  int            `json:"total"`
	ByType map[string]int `json:"by_type"`
}

// QuantizeSummary tallies the graph's call_module nodes by op and module
// class, so a notebook can show e.g. "linear: 14 LinearInteger".
func QuantizeSummary(mg *ir.MaseGraph) []QuantizeSummaryRow {
	rows := map[string]*QuantizeSummaryRow{}
	for _, n := range mg.Graph.Nodes() {
		if n.Op != ir.CallModule {
			continue
		}
		mod := mustModule(mg, n)
		op, err := nodeOp(n, mod)
		if err != nil || mod == nil {
			continue
		}
		r := rows[op]
		if r == nil {
			r = &QuantizeSummaryRow{Op: op, ByType: map[string]int{}}
			rows[op] = r
		}
		r.Total++
		r.ByType[mod.TypeName()]++
	}
	var out []QuantizeSummaryRow
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

// String formats a summary row: "linear: 14 (LinearInteger 14)".
func (r QuantizeSummaryRow) String() string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(r.ByType)) {
		parts = append(parts, fmt.Sprintf("%s %d", t, r.ByType[t]))
	}
	return fmt.Sprintf("%s: %d (%s)", r.Op, r.Total, strings.Join(parts, ", "))
}

// precisionInts is MASE's precision list of a format (quant.Spec.Precision)
// as the integers ir.ArgInfo keeps: a default exponent bias (MASE's None)
// is resolved to its value, flags count 0/1, a block size is flattened in
// place, and float statistics (ternary's mean/median/max) are left out.
func precisionInts(s quant.Spec) []int {
	var out []int
	for i, v := range s.Precision() {
		switch x := v.(type) {
		case int:
			out = append(out, x)
		case bool:
			out = append(out, map[bool]int{false: 0, true: 1}[x])
		case []int:
			out = append(out, x...)
		case nil:
			switch s.Format {
			case quant.MinifloatIEEE, quant.MinifloatDenorm, quant.BlockFP:
				if i == 2 {
					out = append(out, quant.DefaultExponentBias(s.ExponentWidth))
				}
			case quant.Log:
				if i == 1 {
					out = append(out, quant.DefaultLogBias(s.Width))
				}
			}
		}
	}
	return out
}
