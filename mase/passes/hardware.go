package passes

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/quant"
)

// DefaultParallelism is the lab's max parallelism per dimension (MASE's
// max_parallelism default [4, 4, 4, 4]).
const DefaultParallelism = 4

// HardwareArgs are add_hardware_metadata_analysis_pass's arguments.
type HardwareArgs struct {
	// Parallelism is the max parallelism of every dimension (0: 4, the
	// lab's). Any positive value works (1, 2, 4, 8, ...); a dimension's
	// parallelism is min(Parallelism, its size).
	Parallelism int
	// MaxParallelism is MASE's max_parallelism list, outermost dimension
	// first (the lab's [4, 4, 4, 4]); it overrides Parallelism when set.
	MaxParallelism []int
}

// maxParallelism returns MASE's max_parallelism list for the args.
func (a HardwareArgs) maxParallelism() ([]int, error) {
	if len(a.MaxParallelism) > 0 {
		for _, p := range a.MaxParallelism {
			if p < 1 {
				return nil, fmt.Errorf("add_hardware_metadata: max_parallelism %v: every entry must be ≥ 1", a.MaxParallelism)
			}
		}
		return slices.Clone(a.MaxParallelism), nil
	}
	p := a.Parallelism
	if p == 0 {
		p = DefaultParallelism
	}
	if p < 1 {
		return nil, fmt.Errorf("add_hardware_metadata: parallelism %d must be ≥ 1", p)
	}
	return []int{p, p, p, p}, nil
}

// ParseHardwareArgs reads the pass's arguments from MASE's dict shape:
// {"max_parallelism": [4, 4, 4, 4]} and/or gomase's {"parallelism": 4},
// with MASE's optional {"interface": {"storage": "BRAM"}} (only BRAM is
// supported). Numbers may be ints or integral float64s (JSON).
func ParseHardwareArgs(m map[string]any) (HardwareArgs, error) {
	var a HardwareArgs
	toInt := func(key string, v any) (int, error) {
		if n, ok := quant.AsInt(v); ok {
			return n, nil
		}
		return 0, fmt.Errorf("add_hardware_metadata: %s: %v (%T) is not an integer", key, v, v)
	}
	for k, v := range m {
		switch k {
		case "parallelism":
			p, err := toInt(k, v)
			if err != nil {
				return a, err
			}
			a.Parallelism = p
		case "max_parallelism":
			var l []any
			switch x := v.(type) {
			case []any:
				l = x
			case []int:
				for _, e := range x {
					l = append(l, e)
				}
			default:
				return a, fmt.Errorf("add_hardware_metadata: max_parallelism is %T, want a list of integers", v)
			}
			for _, e := range l {
				p, err := toInt(k, e)
				if err != nil {
					return a, err
				}
				a.MaxParallelism = append(a.MaxParallelism, p)
			}
		case "interface":
			im, ok := v.(map[string]any)
			if !ok {
				return a, fmt.Errorf("add_hardware_metadata: interface is %T, want {\"storage\": \"BRAM\"}", v)
			}
			for ik, iv := range im {
				if ik != "storage" || iv != "BRAM" {
					return a, fmt.Errorf("add_hardware_metadata: interface %s = %v is not supported (only storage BRAM)", ik, iv)
				}
			}
		default:
			return a, fmt.Errorf("add_hardware_metadata: unknown argument %q (allowed: parallelism, max_parallelism, interface)", k)
		}
	}
	_, err := a.maxParallelism()
	return a, err
}

// AddHardwareMetadata is MASE's add_hardware_metadata_analysis_pass. It
// needs the common metadata with fixed-point precisions (InitMetadata,
// AddCommonMetadata, then QuantizeTransform with an integer/fixed config)
// and fills every node's Meta.Hardware:
//
//   - is_implicit: placeholders, get_attr, output and every implicit_func
//     node (flatten, view, size, ...) — they are wiring, not hardware;
//   - toolchain INTERNAL_RTL, module (fixed_linear, fixed_relu,
//     fixed_leaky_relu) and dependence_files (the rtl/*.sv files the module
//     needs, file names of this repository's rtl/ directory);
//   - interface: {"storage": "BRAM", "transpose": false} per parameter
//     (weight, bias), {} per scalar argument (relu's {"inplace": {}});
//   - max_parallelism (MASE's list, outermost first) and parallelism (per
//     tensor argument/result, dimension 0 innermost first);
//   - verilog_param with MASE's names (spec §8.3): per tensor argument and
//     result NAME_PRECISION_i, NAME_TENSOR_SIZE_DIM_d = shape[len−1−d],
//     NAME_PARALLELISM_DIM_d = min(max_parallelism[::-1][d], that size);
//     bool arguments as 0/1 (INPLACE); leaky_relu's negative_slope as
//     NEGATIVE_SLOPE_PRECISION_0/1 and NEGATIVE_SLOPE_VALUE (FixedSlope);
//     HAS_BIAS = 0 for a Linear without bias (fixed_linear's default is 1).
//
// The graph metadata gets nodes_in/nodes_out (the first and last hardware
// nodes, reached from the placeholders and the output through implicit
// nodes, as MASE's get_input_nodes/get_output_nodes) and
// hardware["verilog_sources"] (every hardware node's dependence files,
// without repeats).
//
// Errors, with the node named: a non-implicit node whose op the library
// lacks, a tensor that is not fixed point or has more dimensions than
// max_parallelism, a linear that is not an nn.Linear-like module.
//
// Differences from MASE: unsupported ops are errors (MASE marks them
// INTERNAL_HLS with no module); every implicit_func node is implicit, not
// only those next to the inputs and outputs; the slope of leaky_relu (not
// in MASE's tables) is converted to fixed point; and the top-level
// DATA_IN_0_* parameters come from the real input node (TopVerilogParams),
// where MASE lets the last of nodes_in + nodes_out overwrite them.
//
// It returns {"nodes_in", "nodes_out", "verilog_sources"}.
func AddHardwareMetadata(mg *ir.MaseGraph, args HardwareArgs) (*ir.MaseGraph, Info, error) {
	maxPar, err := args.maxParallelism()
	if err != nil {
		return nil, nil, err
	}
	nodes := mg.Graph.Nodes()
	for _, n := range nodes {
		if n.Meta == nil || n.Meta.Common.MaseType == "" {
			return nil, nil, fmt.Errorf("add_hardware_metadata: node %s has no common metadata: run InitMetadata, AddCommonMetadata and QuantizeTransform first", n.Name)
		}
	}
	type result struct {
		n  *ir.Node
		hw ir.Hardware
	}
	var results []result
	var sources []string
	for _, n := range nodes {
		// device_id: 0 for implicit nodes, -1 (on-chip) for hardware ones, as MASE sets them.
		hw := ir.Hardware{IsImplicit: isImplicit(n), MaxParallelism: slices.Clone(maxPar)}
		if !hw.IsImplicit {
			hw.DeviceID = -1
			if err := fillHardware(mg, n, &hw, maxPar); err != nil {
				return nil, nil, fmt.Errorf("add_hardware_metadata: %w", err)
			}
			for _, f := range hw.DependenceFiles {
				if !slices.Contains(sources, f) {
					sources = append(sources, f)
				}
			}
		}
		results = append(results, result{n, hw})
	}
	for _, r := range results {
		r.n.Meta.Hardware = r.hw
	}
	in, out := hardwareEnds(mg.Graph)
	mg.Graph.Meta.NodesIn, mg.Graph.Meta.NodesOut = in, out
	if mg.Graph.Meta.Hardware == nil {
		mg.Graph.Meta.Hardware = map[string]any{}
	}
	mg.Graph.Meta.Hardware["verilog_sources"] = slices.Clone(sources)
	return mg, Info{"nodes_in": in, "nodes_out": out, "verilog_sources": sources}, nil
}

// isImplicit reports whether a node is wiring rather than hardware.
func isImplicit(n *ir.Node) bool {
	switch n.Op {
	case ir.Placeholder, ir.Output, ir.GetAttr:
		return true
	}
	switch n.Meta.Common.MaseType {
	case ops.TypeImplicitFunc, ops.TypePlaceholder, ops.TypeOutput, ops.TypeGetAttr:
		return true
	}
	return false
}

// hardwareEnds walks from the placeholders forwards and from the output
// backwards through implicit nodes to the first/last hardware nodes.
func hardwareEnds(g *ir.Graph) (in, out []string) {
	var next func(n *ir.Node)
	next = func(n *ir.Node) {
		for _, u := range n.Users() {
			if u.Meta.Hardware.IsImplicit {
				if u.Op != ir.Output {
					next(u)
				}
			} else if !slices.Contains(in, u.Name) {
				in = append(in, u.Name)
			}
		}
	}
	for _, p := range g.Placeholders() {
		next(p)
	}
	var prev func(n *ir.Node)
	prev = func(n *ir.Node) {
		for _, p := range n.Inputs() {
			if p.Meta.Hardware.IsImplicit {
				prev(p)
			} else if !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	if o := g.OutputNode(); o != nil {
		prev(o)
	}
	return in, out
}

// isTensorArg reports whether an argument's metadata describes a tensor
// (a traced value or a module parameter) rather than a config scalar.
func isTensorArg(a *ir.ArgInfo) bool { return a != nil && (a.DType != "" || a.IsParam) }

// fillHardware fills one hardware node's metadata.
func fillHardware(mg *ir.MaseGraph, n *ir.Node, hw *ir.Hardware, maxPar []int) error {
	op := n.Meta.Common.MaseOp
	comp, ok := ops.Hardware(op)
	if !ok {
		return fmt.Errorf("node %s: op %q (%s) has no hardware component (supported: %s)", n.Name, op, n.Meta.Common.MaseType, strings.Join(ops.HardwareOps(), ", "))
	}
	if op == "linear" && n.Op != ir.CallModule {
		return fmt.Errorf("node %s: op linear as a %s: fixed_linear takes an nn.Linear module (weight and bias as parameters)", n.Name, n.Op)
	}
	hw.Toolchain, hw.Module, hw.DependenceFiles = "INTERNAL_RTL", comp.Module, comp.Files
	hw.Interface = map[string]map[string]any{}
	hw.VerilogParam = map[string]any{}
	hw.Parallelism = map[string][]int{}
	var slope *float64
	tensor := func(name string, a *ir.ArgInfo) error {
		if a.Type != "fixed" && a.Type != "integer" || len(a.Precision) != 2 {
			return fmt.Errorf("node %s (op %s): %s is %s %v; the hardware needs fixed point [width, frac_width] (run QuantizeTransform with an integer/fixed config)",
				n.Name, op, name, a.Type, a.Precision)
		}
		if len(a.Shape) > len(maxPar) {
			return fmt.Errorf("node %s (op %s): %s has shape %v, more dimensions than max_parallelism %v", n.Name, op, name, a.Shape, maxPar)
		}
		up := strings.ToUpper(name)
		for i, p := range a.Precision {
			hw.VerilogParam[fmt.Sprintf("%s_PRECISION_%d", up, i)] = p
		}
		rev := slices.Clone(maxPar)
		slices.Reverse(rev)
		par := make([]int, len(a.Shape))
		for d := range a.Shape {
			size := a.Shape[len(a.Shape)-1-d]
			par[d] = min(rev[d], size)
			hw.VerilogParam[fmt.Sprintf("%s_TENSOR_SIZE_DIM_%d", up, d)] = size
			hw.VerilogParam[fmt.Sprintf("%s_PARALLELISM_DIM_%d", up, d)] = par[d]
		}
		hw.Parallelism[name] = par
		return nil
	}
	for _, name := range n.Meta.Common.Args.Keys() {
		a := n.Meta.Common.Args.Get(name)
		if isTensorArg(a) {
			if !strings.HasPrefix(name, "data_in") {
				hw.Interface[name] = map[string]any{"storage": "BRAM", "transpose": false}
			}
			if err := tensor(name, a); err != nil {
				return err
			}
			continue
		}
		hw.Interface[name] = map[string]any{}
		switch v := a.Value.(type) {
		case bool:
			hw.VerilogParam[strings.ToUpper(name)] = map[bool]int{false: 0, true: 1}[v]
		case int:
			hw.VerilogParam[strings.ToUpper(name)] = v
		case float64:
			if op == "leaky_relu" && name == "negative_slope" {
				slope = &v
				continue
			}
			return fmt.Errorf("node %s (op %s): argument %s = %v is a float, which no verilog parameter of %s takes", n.Name, op, name, v, comp.Module)
		default:
			return fmt.Errorf("node %s (op %s): argument %s = %v (%s) has no verilog parameter", n.Name, op, name, a.Value, a.Type)
		}
	}
	for _, name := range n.Meta.Common.Results.Keys() {
		if err := tensor(name, n.Meta.Common.Results.Get(name)); err != nil {
			return err
		}
	}
	for _, t := range []string{"data_in_0", "data_out_0"} {
		if _, ok := hw.Parallelism[t]; !ok {
			return fmt.Errorf("node %s (op %s): no tensor %s in its common metadata", n.Name, op, t)
		}
	}
	var mod nn.Module
	if n.Op == ir.CallModule {
		m, err := mg.Module(n)
		if err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		mod = m
	}
	switch op {
	case "linear":
		if n.Meta.Common.Args.Get("weight") == nil {
			return fmt.Errorf("node %s (op linear): module %s has no weight parameter", n.Name, n.Target)
		}
		if n.Meta.Common.Args.Get("bias") == nil {
			hw.VerilogParam["HAS_BIAS"] = 0
		}
	case "leaky_relu":
		if l, ok := mod.(*nn.LeakyReLU); ok {
			s := l.NegativeSlope
			slope = &s
		}
		if slope == nil {
			s := nn.DefaultNegativeSlope
			slope = &s
		}
		width := n.Meta.Common.Args.Get("data_in_0").Precision[0]
		value, frac, err := FixedSlope(*slope, width)
		if err != nil {
			return fmt.Errorf("node %s (op leaky_relu): %w", n.Name, err)
		}
		hw.VerilogParam["NEGATIVE_SLOPE_PRECISION_0"] = width
		hw.VerilogParam["NEGATIVE_SLOPE_PRECISION_1"] = frac
		hw.VerilogParam["NEGATIVE_SLOPE_VALUE"] = int(value)
	}
	return nil
}

// maxSlopeFrac bounds the fraction bits FixedSlope uses.
const maxSlopeFrac = 30

// FixedSlope converts a leaky ReLU slope to fixed_leaky_relu's parameters:
// the signed width-bit integer value and frac fraction bits with slope ≈
// value / 2^frac. It takes the most fraction bits (up to 30) for which
// round(slope·2^frac) still fits in width bits, then drops trailing zero
// bits, so an exact slope keeps its smallest form (1/16 → 1, 4; the
// default 0.01 at width 8 → 41, 12, i.e. 0.010009765625). The slope is
// rounded to nearest here; the hardware then floors the product
// (spec §9 item 40: x = −1 in Q(8,4) with slope 1/16 gives −1, not 0).
// A slope too large for width bits is an error.
func FixedSlope(slope float64, width int) (value int64, frac int, err error) {
	if math.IsNaN(slope) || math.IsInf(slope, 0) {
		return 0, 0, fmt.Errorf("negative_slope %v is not a finite number", slope)
	}
	if width < 2 || width > 62 {
		return 0, 0, fmt.Errorf("slope width %d (allowed: 2..62)", width)
	}
	lo, hi := -(int64(1) << (width - 1)), int64(1)<<(width-1)-1
	fits := func(f int) (int64, bool) {
		v := math.Round(math.Ldexp(slope, f))
		return int64(v), v >= float64(lo) && v <= float64(hi)
	}
	v, ok := fits(0)
	if !ok {
		return 0, 0, fmt.Errorf("negative_slope %v does not fit in a signed %d-bit value", slope, width)
	}
	frac = 0
	for f := 1; f <= maxSlopeFrac; f++ {
		w, ok := fits(f)
		if !ok {
			break
		}
		v, frac = w, f
	}
	if v == 0 {
		return 0, 0, nil
	}
	for frac > 0 && v%2 == 0 {
		v, frac = v/2, frac-1
	}
	return v, frac, nil
}

// VerilogParam is one verilog parameter of the generated top level.
type VerilogParam struct {
	Name  string
	Value any
}

// TopVerilogParams lists the top-level parameters the generated top.sv
// declares (MASE's get_verilog_parameters), in MASE's order: for every
// hardware node, in graph order, "<node>_<KEY>" for each of its
// verilog_param keys (order as OrderedVerilogParams); then the interface
// parameters without prefix: DATA_IN_<i>_* of each nodes_in node's data
// inputs that come from the graph input, and DATA_OUT_0_* of the nodes_out
// node.
//
// Difference from MASE (spec §9 item 37): MASE copies every key containing
// DATA_IN or DATA_OUT from each node of nodes_in + nodes_out in turn, so
// the output node (relu) overwrites DATA_IN_0_TENSOR_SIZE_DIM_0 with its
// own input size (8 for the lab's MLP, whose input has 4 elements). Here
// DATA_IN_* come only from the input node and DATA_OUT_* only from the
// output node, so DATA_IN_0_TENSOR_SIZE_DIM_0 is 4. The count is the same
// for the lab's MLP: 24 (fc1) + 13 (relu) + 6 + 6 = 49.
func TopVerilogParams(mg *ir.MaseGraph) ([]VerilogParam, error) {
	var out []VerilogParam
	for _, n := range mg.Graph.Nodes() {
		if n.Meta == nil || n.Meta.Hardware.IsImplicit || n.Meta.Hardware.VerilogParam == nil {
			continue
		}
		for _, p := range OrderedVerilogParams(n) {
			out = append(out, VerilogParam{Name: n.Name + "_" + p.Name, Value: p.Value})
		}
	}
	gm := mg.Graph.Meta
	if len(gm.NodesIn) == 0 || len(gm.NodesOut) == 0 {
		return nil, fmt.Errorf("top verilog parameters: the graph has no nodes_in/nodes_out: run AddHardwareMetadata first")
	}
	for _, name := range gm.NodesIn {
		n := mg.Graph.Node(name)
		if n == nil {
			return nil, fmt.Errorf("top verilog parameters: nodes_in names %s, which the graph lacks", name)
		}
		// data_in_i comes from the graph input when the i-th tensor input
		// is a placeholder, possibly through implicit nodes.
		tensorIdx := 0
		for _, in := range n.Inputs() {
			if in.Meta == nil {
				continue
			}
			key := fmt.Sprintf("DATA_IN_%d_", tensorIdx)
			tensorIdx++
			if !fromGraphInput(in) {
				continue
			}
			for _, p := range OrderedVerilogParams(n) {
				if strings.HasPrefix(p.Name, key) {
					out = append(out, p)
				}
			}
		}
	}
	last := mg.Graph.Node(gm.NodesOut[len(gm.NodesOut)-1])
	if last == nil {
		return nil, fmt.Errorf("top verilog parameters: nodes_out names %s, which the graph lacks", gm.NodesOut[len(gm.NodesOut)-1])
	}
	for _, p := range OrderedVerilogParams(last) {
		if strings.HasPrefix(p.Name, "DATA_OUT_") {
			out = append(out, p)
		}
	}
	return out, nil
}

// fromGraphInput reports whether a node is a placeholder or an implicit
// node fed only from the graph's inputs.
func fromGraphInput(n *ir.Node) bool {
	if n.Op == ir.Placeholder {
		return true
	}
	if n.Meta == nil || !n.Meta.Hardware.IsImplicit || n.Op == ir.GetAttr {
		return false
	}
	ins := n.Inputs()
	if len(ins) == 0 {
		return false
	}
	for _, in := range ins {
		if !fromGraphInput(in) {
			return false
		}
	}
	return true
}

// tensorParamSuffixes is the order of a tensor's parameters per dimension.
var tensorParamSuffixes = []string{"TENSOR_SIZE_DIM_%d", "PARALLELISM_DIM_%d"}

// OrderedVerilogParams returns a node's verilog_param in MASE's emission
// order (spec §8.3): per argument and result in metadata order, the
// PRECISION_i, then TENSOR_SIZE_DIM_d and PARALLELISM_DIM_d per dimension,
// or the scalar's own key (INPLACE); leaky_relu's NEGATIVE_SLOPE_* after
// its negative_slope argument's place (PRECISION_0, PRECISION_1, VALUE);
// keys matching no argument (HAS_BIAS) last, sorted.
func OrderedVerilogParams(n *ir.Node) []VerilogParam {
	vp := n.Meta.Hardware.VerilogParam
	done := map[string]bool{}
	var out []VerilogParam
	add := func(k string) {
		if v, ok := vp[k]; ok && !done[k] {
			done[k] = true
			out = append(out, VerilogParam{Name: k, Value: v})
		}
	}
	names := append(n.Meta.Common.Args.Keys(), n.Meta.Common.Results.Keys()...)
	if n.Meta.Common.MaseOp == "leaky_relu" && !slices.Contains(names, "negative_slope") {
		// A LeakyReLU module has no negative_slope argument: its
		// parameters go before data_out_0.
		i := max(0, len(n.Meta.Common.Args.Keys()))
		names = slices.Insert(names, i, "negative_slope")
	}
	for _, a := range names {
		up := strings.ToUpper(a)
		add(up)
		for i := 0; i < 8; i++ {
			add(fmt.Sprintf("%s_PRECISION_%d", up, i))
		}
		for d := 0; d < 8; d++ {
			for _, s := range tensorParamSuffixes {
				add(up + "_" + fmt.Sprintf(s, d))
			}
		}
		add(up + "_VALUE")
	}
	var rest []string
	for k := range vp {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		add(k)
	}
	return out
}
