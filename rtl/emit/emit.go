// Package emit turns a quantized, hardware-annotated MaseGraph into a
// SystemVerilog design — MASE's emit_verilog_top, emit_internal_rtl,
// emit_bram and (a value-checking replacement of) emit_cocotb passes — and
// simulates it with Verilator, comparing every output bit for bit with the
// integer models of package rtl.
//
//	mg, _ := mase.NewMaseGraph(model, nil)
//	... passes.InitMetadata, passes.AddCommonMetadata, emit.QuantizeFixed, passes.AddHardwareMetadata ...
//	d, err := emit.Verilog(mg, "out", emit.Options{})
//	res, err := emit.Simulate(ctx, "out", emit.SimOptions{Vectors: 1000})
//
// The directory then holds top.sv (structure and names as MASE's top.sv),
// one <node>_<param>_source.sv wrapper and <node>_<param>_rom.dat ROM image
// per parameter, the library components the design uses, the testbench
// top_tb.sv and design.json (everything Simulate needs, so a directory can
// be simulated on its own). See rtl/README.md.
package emit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/ops"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/rtl"
)

// DesignFile is the name of the design description written beside top.sv.
const DesignFile = "design.json"

// Options tune the emitter.
type Options struct {
	// Top is the top module's name; "" means "top".
	Top string
}

// Param is one Verilog parameter with its integer value.
type Param struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Stream describes one valid/ready port of the top module.
type Stream struct {
	// Node is the graph node whose data_in_0 (input) or data_out_0
	// (output) the port is.
	Node   string     `json:"node"`
	Format rtl.Format `json:"format"`
	// Size is TENSOR_SIZE_DIM_0: the elements of one vector (row).
	Size int `json:"size"`
	// Par0 and Par1 are PARALLELISM_DIM_0/1: a beat holds Par1 rows of
	// Par0 elements, lane r·Par0 + c.
	Par0 int `json:"par0"`
	Par1 int `json:"par1"`
}

// Lanes is the number of elements of one beat.
func (s Stream) Lanes() int { return s.Par0 * s.Par1 }

// Layer is one hardware node of the design, with what the Go model needs.
type Layer struct {
	Node   string     `json:"node"`
	Op     string     `json:"op"`
	Module string     `json:"module"`
	In     rtl.Format `json:"in"`
	Out    rtl.Format `json:"out"`
	// InSize and OutSize are the elements per vector in and out.
	InSize  int `json:"in_size"`
	OutSize int `json:"out_size"`
	// Linear: the quantized weight (OutSize × InSize, row-major as
	// PyTorch's W[out, in]) and bias, with their formats.
	WeightFormat *rtl.Format `json:"weight_format,omitempty"`
	Weight       [][]int64   `json:"weight,omitempty"`
	BiasFormat   *rtl.Format `json:"bias_format,omitempty"`
	Bias         []int64     `json:"bias,omitempty"`
	// Leaky ReLU: slope = SlopeValue / 2^SlopeFrac.
	SlopeValue int64 `json:"slope_value,omitempty"`
	SlopeFrac  int   `json:"slope_frac,omitempty"`
	// Params are the node's Verilog parameters in emission order.
	Params []Param `json:"params"`
}

// Design is what Verilog wrote: the top module's ports, the layers in
// stream order and the files. It is saved as design.json.
type Design struct {
	Top    string  `json:"top"`
	Input  Stream  `json:"input"`
	Output Stream  `json:"output"`
	Layers []Layer `json:"layers"`
	// TopParams are the top module's parameters in order (node-prefixed
	// ones, then the unprefixed DATA_IN_0_* / DATA_OUT_0_*).
	TopParams []Param `json:"top_params"`
	// Sources are the .sv files of the design (top.sv, parameter sources,
	// library components); Testbench is the testbench file; ROMs are the
	// .dat files. All relative to the directory.
	Sources   []string `json:"sources"`
	Testbench string   `json:"testbench"`
	ROMs      []string `json:"roms"`
}

// Reference computes the design's output for one input vector with the
// bit-exact integer models of package rtl (floor rounding, saturation).
func (d *Design) Reference(x []int64) ([]int64, error) {
	if len(x) != d.Input.Size {
		return nil, fmt.Errorf("emit: input vector has %d elements, the design takes %d", len(x), d.Input.Size)
	}
	v := x
	for _, l := range d.Layers {
		switch l.Op {
		case "linear":
			v = rtl.Linear(v, l.Weight, l.Bias, l.In, *l.WeightFormat, *l.BiasFormat, l.Out)
		case "relu":
			y := make([]int64, len(v))
			for i, e := range v {
				y[i] = rtl.ReLU(e, l.In, l.Out)
			}
			v = y
		case "leaky_relu":
			y := make([]int64, len(v))
			for i, e := range v {
				y[i] = rtl.LeakyReLU(e, l.In, l.SlopeValue, l.SlopeFrac, l.Out)
			}
			v = y
		default:
			return nil, fmt.Errorf("emit: layer %s: no model for op %s", l.Node, l.Op)
		}
	}
	return v, nil
}

// LoadDesign reads dir/design.json (a regular file of at most 64 MiB) and
// checks it (Design.Validate).
func LoadDesign(dir string) (*Design, error) {
	path := filepath.Join(dir, DesignFile)
	b, err := limits.ReadFile(path, designFile)
	if err != nil {
		return nil, fmt.Errorf("emit: %w (run `mase emit` first)", err)
	}
	var d Design
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("emit: %s: %w", path, err)
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("emit: %s: %w", path, err)
	}
	return &d, nil
}

// hwNode is a non-implicit node being emitted.
type hwNode struct {
	n      *ir.Node
	op     string
	module string
	params []Param
	vals   map[string]int64
	// tensor args (data_in_0, weight, bias) and results (data_out_0)
	args    []string
	results []string
	layer   Layer
}

// Verilog writes the design for mg into dir (created if needed). mg must
// be quantized to fixed point (QuantizeFixed) and carry hardware metadata
// (passes.AddHardwareMetadata: Module, VerilogParam with MASE's names,
// IsImplicit, nodes_in/nodes_out): its
// hardware nodes must form one chain from the input to the output.
// Implicit nodes (placeholder, flatten, output) become wiring. A node whose
// op has no library component is an error naming the node and the op.
func Verilog(mg *ir.MaseGraph, dir string, opts Options) (*Design, error) {
	top := opts.Top
	if top == "" {
		top = "top"
	}
	var hw []*hwNode
	for _, n := range mg.Nodes() {
		if n.Meta == nil {
			return nil, fmt.Errorf("emit: node %s has no metadata (run InitMetadata, AddCommonMetadata and the hardware metadata pass first)", n.Name)
		}
		if n.Meta.Hardware.IsImplicit || n.Op == ir.Placeholder || n.Op == ir.Output {
			continue
		}
		h, err := newHWNode(mg, n)
		if err != nil {
			return nil, err
		}
		hw = append(hw, h)
	}
	if len(hw) == 0 {
		return nil, fmt.Errorf("emit: the graph has no hardware nodes (is the hardware metadata there? every node is implicit)")
	}
	// The hardware nodes must form a chain: each one's data_in_0 comes
	// (through implicit nodes) from the previous one, the first one's from
	// a placeholder, and the output from the last one.
	for i, h := range hw {
		src, err := dataSource(h.n)
		if err != nil {
			return nil, err
		}
		switch {
		case i == 0 && src.Op != ir.Placeholder:
			return nil, fmt.Errorf("emit: node %s: its input comes from %s, not from a graph input", h.n.Name, src.Name)
		case i > 0 && src != hw[i-1].n:
			return nil, fmt.Errorf("emit: node %s: its input comes from %s, not from %s; only chains of hardware nodes are supported", h.n.Name, src.Name, hw[i-1].n.Name)
		}
	}
	if o := mg.Graph.OutputNode(); o != nil {
		if src, err := dataSource(o); err != nil || src != hw[len(hw)-1].n {
			return nil, fmt.Errorf("emit: the graph output does not come from the last hardware node %s", hw[len(hw)-1].n.Name)
		}
	}
	if gm := mg.Graph.Meta; len(gm.NodesIn) > 0 && gm.NodesIn[0] != hw[0].n.Name && !isPlaceholder(mg, gm.NodesIn[0]) {
		return nil, fmt.Errorf("emit: graph metadata nodes_in = %v, but the first hardware node is %s", gm.NodesIn, hw[0].n.Name)
	}
	for i := 1; i < len(hw); i++ {
		a, b := hw[i-1], hw[i]
		for _, suf := range []string{"PRECISION_0", "PRECISION_1", "PARALLELISM_DIM_0", "PARALLELISM_DIM_1"} {
			if a.vals["DATA_OUT_0_"+suf] != b.vals["DATA_IN_0_"+suf] {
				return nil, fmt.Errorf("emit: %s DATA_OUT_0_%s = %d but %s DATA_IN_0_%s = %d: connected streams must agree (no cast is inserted)",
					a.n.Name, suf, a.vals["DATA_OUT_0_"+suf], b.n.Name, suf, b.vals["DATA_IN_0_"+suf])
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d := &Design{Top: top}
	first, last := hw[0], hw[len(hw)-1]
	d.Input = stream(first, "DATA_IN_0")
	d.Output = stream(last, "DATA_OUT_0")
	for _, h := range hw {
		d.Layers = append(d.Layers, h.layer)
	}
	tops, err := passes.TopVerilogParams(mg)
	if err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	if d.TopParams, err = intParams("top", tops); err != nil {
		return nil, err
	}
	// Every file is written at the end, together and atomically: a failure
	// (a full disk) leaves the folder's earlier design as it was.
	var files []atomicfile.File
	write := func(name string, data []byte) error {
		files = append(files, atomicfile.File{Path: filepath.Join(dir, name), Data: data})
		return nil
	}
	// Parameter sources and ROMs.
	var sourceFiles []string
	for _, h := range hw {
		for _, a := range h.args {
			if a == "data_in_0" || strings.HasPrefix(a, "data_in_") {
				continue
			}
			words, err := romWords(h, a)
			if err != nil {
				return nil, err
			}
			w := int(h.vals[strings.ToUpper(a)+"_PRECISION_0"])
			rom := fmt.Sprintf("%s_%s_rom.dat", h.n.Name, a)
			if err := write(rom, rtl.ROMFile(words, w)); err != nil {
				return nil, err
			}
			d.ROMs = append(d.ROMs, rom)
			src := fmt.Sprintf("%s_%s_source.sv", h.n.Name, a)
			if err := write(src, []byte(sourceModule(h, a, rom))); err != nil {
				return nil, err
			}
			sourceFiles = append(sourceFiles, src)
		}
	}
	if err := write("top.sv", []byte(topModule(d, hw))); err != nil {
		return nil, err
	}
	d.Sources = append([]string{"top.sv"}, sourceFiles...)
	// Library components, with their dependencies.
	lib := map[string]bool{"fixed_param_source": len(sourceFiles) > 0}
	for _, h := range hw {
		lib[h.module] = true
		for _, dep := range rtl.Dependencies[h.module] {
			lib[dep] = true
		}
		for _, f := range h.n.Meta.Hardware.DependenceFiles {
			c := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
			if !slices.Contains(rtl.Components, c) {
				return nil, fmt.Errorf("emit: node %s: dependence file %q is not a library component (have %s)", h.n.Name, f, strings.Join(rtl.Components, ", "))
			}
			lib[c] = true
		}
	}
	for _, c := range rtl.Components {
		if !lib[c] {
			continue
		}
		text, err := rtl.Source(c)
		if err != nil {
			return nil, err
		}
		if err := write(c+".sv", []byte(text)); err != nil {
			return nil, err
		}
		d.Sources = append(d.Sources, c+".sv")
	}
	d.Testbench = "top_tb.sv"
	if err := write(d.Testbench, []byte(testbench(d))); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(d, "", " ")
	if err != nil {
		return nil, err
	}
	if err := write(DesignFile, append(js, '\n')); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(files...); err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	return d, nil
}

func isPlaceholder(mg *ir.MaseGraph, name string) bool {
	n := mg.Graph.Node(name)
	return n != nil && n.Op == ir.Placeholder
}

// dataSource follows a node's first data input back through implicit nodes
// to the non-implicit node (or placeholder) that produces it.
func dataSource(n *ir.Node) (*ir.Node, error) {
	cur := n
	for range 1000 {
		ins := cur.Inputs()
		if len(ins) == 0 {
			return nil, fmt.Errorf("emit: node %s has no data input", cur.Name)
		}
		if len(ins) > 1 {
			return nil, fmt.Errorf("emit: node %s has %d data inputs; only chains of single-input nodes are supported", cur.Name, len(ins))
		}
		src := ins[0]
		if src.Op == ir.Placeholder || src.Meta == nil || !src.Meta.Hardware.IsImplicit {
			return src, nil
		}
		cur = src
	}
	return nil, fmt.Errorf("emit: node %s: input chain too long", n.Name)
}

func stream(h *hwNode, prefix string) Stream {
	return Stream{
		Node:   h.n.Name,
		Format: rtl.Format{Width: int(h.vals[prefix+"_PRECISION_0"]), Frac: int(h.vals[prefix+"_PRECISION_1"])},
		Size:   int(h.vals[prefix+"_TENSOR_SIZE_DIM_0"]),
		Par0:   int(h.vals[prefix+"_PARALLELISM_DIM_0"]),
		Par1:   int(h.vals[prefix+"_PARALLELISM_DIM_1"]),
	}
}

// paramSuffixes are a tensor's parameters, in MASE's order.
var paramSuffixes = []string{"PRECISION_0", "PRECISION_1", "TENSOR_SIZE_DIM_0", "PARALLELISM_DIM_0", "TENSOR_SIZE_DIM_1", "PARALLELISM_DIM_1"}

// intParams converts verilog parameters to integers (bools count 0/1).
func intParams(where string, ps []passes.VerilogParam) ([]Param, error) {
	out := make([]Param, len(ps))
	for i, p := range ps {
		v, err := toInt(p.Value)
		if err != nil {
			return nil, fmt.Errorf("emit: %s: verilog parameter %s = %v: %w", where, p.Name, p.Value, err)
		}
		out[i] = Param{Name: p.Name, Value: v}
	}
	return out, nil
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case uint64:
		return int64(x), nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if x != math.Trunc(x) {
			return 0, fmt.Errorf("not an integer")
		}
		return int64(x), nil
	case float32:
		return toInt(float64(x))
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("unsupported type %T (want an integer or a bool)", v)
}

func newHWNode(mg *ir.MaseGraph, n *ir.Node) (*hwNode, error) {
	op := n.Meta.Common.MaseOp
	module := n.Meta.Hardware.Module
	comp, ok := ops.Hardware(op)
	want := comp.Module
	if !ok || (module != "" && module != want) {
		var allowed []string
		for _, k := range ops.HardwareOps() {
			c, _ := ops.Hardware(k)
			allowed = append(allowed, k+" ("+c.Module+")")
		}
		sort.Strings(allowed)
		if module == "" {
			module = "none"
		}
		return nil, fmt.Errorf("emit: node %s: op %s (module %s) has no hardware component in the library (supported: %s)",
			n.Name, op, module, strings.Join(allowed, ", "))
	}
	if tc := n.Meta.Hardware.Toolchain; tc != "" && tc != "INTERNAL_RTL" {
		return nil, fmt.Errorf("emit: node %s: toolchain %s is not supported (want INTERNAL_RTL)", n.Name, tc)
	}
	params, err := intParams("node "+n.Name, passes.OrderedVerilogParams(n))
	if err != nil {
		return nil, err
	}
	vals := map[string]int64{}
	for _, p := range params {
		vals[p.Name] = p.Value
	}
	h := &hwNode{n: n, op: op, module: want, params: params, vals: vals}
	for _, a := range n.Meta.Common.Args.Keys() {
		if info := n.Meta.Common.Args.Get(a); info.Shape != nil && len(info.Precision) > 0 {
			h.args = append(h.args, a)
		}
	}
	for _, r := range n.Meta.Common.Results.Keys() {
		if info := n.Meta.Common.Results.Get(r); info.Shape != nil {
			h.results = append(h.results, r)
		}
	}
	need := func(keys ...string) error {
		for _, k := range keys {
			if _, ok := vals[k]; !ok {
				return fmt.Errorf("emit: node %s (%s): verilog parameter %s is missing (run the hardware metadata pass)", n.Name, op, k)
			}
		}
		return nil
	}
	for _, t := range append(slices.Clone(h.args), h.results...) {
		up := strings.ToUpper(t)
		for _, s := range paramSuffixes {
			if err := need(up + "_" + s); err != nil {
				return nil, err
			}
		}
		if info := n.Meta.Common.Args.Get(t); info != nil && info.Type != "fixed" && info.Type != "integer" {
			return nil, fmt.Errorf("emit: node %s: argument %s has type %q; the hardware needs fixed point (quantize first)", n.Name, t, info.Type)
		}
		if info := n.Meta.Common.Results.Get(t); info != nil && info.Type != "fixed" && info.Type != "integer" {
			return nil, fmt.Errorf("emit: node %s: result %s has type %q; the hardware needs fixed point (quantize first)", n.Name, t, info.Type)
		}
	}
	if !slices.Contains(h.args, "data_in_0") || !slices.Contains(h.results, "data_out_0") {
		return nil, fmt.Errorf("emit: node %s: want tensor argument data_in_0 and result data_out_0 (have %v, %v)", n.Name, h.args, h.results)
	}
	format := func(p string) rtl.Format {
		return rtl.Format{Width: int(vals[p+"_PRECISION_0"]), Frac: int(vals[p+"_PRECISION_1"])}
	}
	h.layer = Layer{Node: n.Name, Op: op, Module: want, In: format("DATA_IN_0"), Out: format("DATA_OUT_0"),
		InSize: int(vals["DATA_IN_0_TENSOR_SIZE_DIM_0"]), OutSize: int(vals["DATA_OUT_0_TENSOR_SIZE_DIM_0"]), Params: params}
	switch op {
	case "linear":
		if err := need("WEIGHT_TENSOR_SIZE_DIM_0", "BIAS_PRECISION_0"); err != nil {
			return nil, err
		}
		wf, bf := format("WEIGHT"), format("BIAS")
		w, shape, err := mg.Model.ParamValues(n.Target + ".weight")
		if err != nil {
			return nil, fmt.Errorf("emit: node %s: %w", n.Name, err)
		}
		out, in := int(vals["WEIGHT_TENSOR_SIZE_DIM_1"]), int(vals["WEIGHT_TENSOR_SIZE_DIM_0"])
		if len(shape) != 2 || shape[0] != out || shape[1] != in || in != h.layer.InSize || out != h.layer.OutSize {
			return nil, fmt.Errorf("emit: node %s: weight shape %v does not match the verilog parameters (out %d, in %d, data in %d, data out %d)",
				n.Name, shape, out, in, h.layer.InSize, h.layer.OutSize)
		}
		b, _, err := mg.Model.ParamValues(n.Target + ".bias")
		if err != nil {
			return nil, fmt.Errorf("emit: node %s: a Linear without bias is not supported (HAS_BIAS=0): %w", n.Name, err)
		}
		h.layer.WeightFormat, h.layer.BiasFormat = &wf, &bf
		for o := range out {
			row := make([]int64, in)
			for i := range in {
				row[i] = rtl.Quantize(float64(w[o*in+i]), wf)
			}
			h.layer.Weight = append(h.layer.Weight, row)
			h.layer.Bias = append(h.layer.Bias, rtl.Quantize(float64(b[o]), bf))
		}
	case "relu":
		if h.layer.InSize != h.layer.OutSize {
			return nil, fmt.Errorf("emit: node %s: relu with %d inputs and %d outputs", n.Name, h.layer.InSize, h.layer.OutSize)
		}
	case "leaky_relu":
		if err := need("NEGATIVE_SLOPE_PRECISION_1", "NEGATIVE_SLOPE_VALUE"); err != nil {
			return nil, err
		}
		h.layer.SlopeValue, h.layer.SlopeFrac = vals["NEGATIVE_SLOPE_VALUE"], int(vals["NEGATIVE_SLOPE_PRECISION_1"])
	}
	for _, a := range h.args {
		if a == "data_in_0" {
			continue
		}
		if a != "weight" && a != "bias" || op != "linear" {
			return nil, fmt.Errorf("emit: node %s: tensor argument %s is not supported (only a linear's weight and bias)", n.Name, a)
		}
		if st, ok := n.Meta.Hardware.Interface[a]["storage"]; ok && st != "BRAM" {
			return nil, fmt.Errorf("emit: node %s: parameter %s has storage %v; only BRAM is supported", n.Name, a, st)
		}
	}
	return h, nil
}

// romWords lays out a parameter as the words its source streams.
func romWords(h *hwNode, a string) ([][]int64, error) {
	up := strings.ToUpper(a)
	p0, p1 := int(h.vals[up+"_PARALLELISM_DIM_0"]), int(h.vals[up+"_PARALLELISM_DIM_1"])
	switch a {
	case "weight":
		return rtl.LinearWeightWords(h.layer.Weight, p0, p1), nil
	case "bias":
		if p1 != 1 {
			return nil, fmt.Errorf("emit: node %s: BIAS_PARALLELISM_DIM_1 = %d, want 1", h.n.Name, p1)
		}
		return rtl.VectorWords(h.layer.Bias, p0), nil
	}
	return nil, fmt.Errorf("emit: node %s: no ROM layout for parameter %s", h.n.Name, a)
}
