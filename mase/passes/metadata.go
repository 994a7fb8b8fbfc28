// Package passes holds MaseGraph's analysis and transform passes, named
// like MASE's: InitMetadata, AddCommonMetadata, CountDropout,
// RemoveDropout, ... Each pass takes the graph and its own typed arguments
// and returns the graph and what it found (MASE's (mg, info) pair).
package passes

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/ops"
)

// Info is what a pass reports besides the graph (MASE's second return).
type Info map[string]any

// InitMetadata attaches empty metadata to every node
// (init_metadata_analysis_pass).
func InitMetadata(mg *ir.MaseGraph) (*ir.MaseGraph, Info, error) {
	for _, n := range mg.Graph.Nodes() {
		n.Meta = ir.NewMeta()
	}
	mg.Graph.Meta = ir.GraphMeta{}
	return mg, Info{}, nil
}

// CommonMetadataArgs are add_common_metadata_analysis_pass's arguments.
type CommonMetadataArgs struct {
	// DummyIn holds one tensor per traced input. Required.
	DummyIn map[string]*tensors.Tensor
	// AddValue records every argument's and result's value (tensors).
	AddValue bool
	// Backend runs the dummy input (nil: backend.Default()). DummyIn's
	// tensors take a copy on it, so a caller that runs them on another
	// backend afterwards names that backend here.
	Backend compute.Backend
}

// AddCommonMetadata infers every node's operator (mase_type, mase_op) and
// propagates shapes by executing the graph on DummyIn, recording each
// node's args and results: type, precision, shape (and value with
// AddValue). Module parameters are listed after the data inputs, 1-D ones
// with shape [1, n] as MASE reports them.
func AddCommonMetadata(mg *ir.MaseGraph, args CommonMetadataArgs) (*ir.MaseGraph, Info, error) {
	if args.DummyIn == nil {
		return nil, nil, fmt.Errorf("add_common_metadata: dummy_in must be provided (one tensor per input: %v)", mg.InputNames)
	}
	for _, n := range mg.Graph.Nodes() {
		if n.Meta == nil {
			return nil, nil, fmt.Errorf("add_common_metadata: node %s has no metadata: run InitMetadata first", n.Name)
		}
		var mod nn.Module
		if n.Op == ir.CallModule {
			mod, _ = mg.Model.Module(n.Target)
		}
		typ, op, err := ops.Infer(n, mod)
		if err != nil {
			return nil, nil, fmt.Errorf("add_common_metadata: %w", err)
		}
		n.Meta.Common.MaseType, n.Meta.Common.MaseOp = typ, op
	}
	be := args.Backend
	if be == nil {
		var err error
		if be, err = backend.Default(); err != nil {
			return nil, nil, err
		}
	}
	vals, err := captureValues(be, mg, args.DummyIn)
	if err != nil {
		return nil, nil, fmt.Errorf("add_common_metadata: running the dummy input: %w", err)
	}
	// The captured tensors are ours: kept on the host in the metadata
	// (AddValue) or freed.
	defer releaseCaptured(vals, args.AddValue)
	for _, n := range mg.Graph.Nodes() {
		if err := recordArgs(mg, n, vals, args.AddValue); err != nil {
			return nil, nil, fmt.Errorf("add_common_metadata: node %s: %w", n.Name, err)
		}
	}
	var in, out []string
	for _, p := range mg.Graph.Placeholders() {
		in = append(in, p.Name)
	}
	if o := mg.Graph.OutputNode(); o != nil {
		out = append(out, o.Name)
	}
	mg.Graph.Meta.NodesIn, mg.Graph.Meta.NodesOut = in, out
	return mg, Info{}, nil
}

// captureValues runs mg once on in and returns every node's value: as one
// computation, or a node at a time when host kernels (graph breaks) make
// that impossible.
func captureValues(be compute.Backend, mg *ir.MaseGraph, in map[string]*tensors.Tensor) (map[*ir.Node]any, error) {
	if execute.HasGraphBreaks(mg.Graph) {
		return execute.CaptureOn(be, mg, in)
	}
	run, err := execute.CompileOn(be, mg, execute.Mode{}, true)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	return run.RunCapture(in)
}

// releaseCaptured frees the device copies of captured values: with keep,
// each tensor moves to the host (the metadata holds it), else it is freed.
func releaseCaptured(vals map[*ir.Node]any, keep bool) {
	for _, v := range vals {
		execute.ForEachTensor(v, func(x *tensors.Tensor) {
			if keep {
				_ = x.ToLocal()
			} else {
				_ = x.FinalizeAll()
			}
		})
	}
}

// argNames names a function's or method's non-tensor positional arguments.
var argNames = map[string][]string{
	"size": {"dim"}, "getitem": {"index"}, "view": {"shape"}, "reshape": {"shape"}, "permute": {"dims"},
	"transpose": {"dim0", "dim1"}, "unsqueeze": {"dim"}, "to": {"dtype"}, "ones": {"size"}, "zeros": {"size"},
	"arange": {"end"}, "softmax": {"dim"}, "flatten": {"start_dim"}, "add": {"other"}, "sub": {"other"},
	"mul": {"other"}, "div": {"other"},
}

func recordArgs(mg *ir.MaseGraph, n *ir.Node, vals map[*ir.Node]any, addValue bool) error {
	c := &n.Meta.Common
	c.Args, c.Results = &ir.ArgMap{}, &ir.ArgMap{}
	if n.Op == ir.Placeholder {
		c.Results.Set("data_out_0", describe(vals[n], addValue))
		return nil
	}
	dataIdx, constIdx := 0, 0
	names := argNames[n.Target]
	addArg := func(v any, name string) {
		if isTensor(v, vals) {
			c.Args.Set(fmt.Sprintf("data_in_%d", dataIdx), describe(resolve(v, vals), addValue))
			dataIdx++
			return
		}
		if name == "" {
			if constIdx < len(names) {
				name = names[constIdx]
			} else {
				name = fmt.Sprintf("arg_%d", constIdx)
			}
			constIdx++
		}
		c.Args.Set(name, describe(resolve(v, vals), true))
	}
	args := n.Args()
	if n.Op == ir.Output && len(args) == 1 {
		if tuple, ok := args[0].([]any); ok {
			args = tuple
		}
	}
	for _, a := range args {
		addArg(a, "")
	}
	kw := n.Kwargs()
	for _, k := range sortedKeys(kw) {
		addArg(kw[k], k)
	}
	if n.Op == ir.CallModule {
		mod, err := mg.Module(n)
		if err != nil {
			return err
		}
		for _, p := range mod.Params() {
			v := mg.Model.Store.GetVariable(nn.StorePath(nn.Join(n.Target, p.Name)))
			if v == nil {
				return fmt.Errorf("parameter %s.%s is missing from the model store", n.Target, p.Name)
			}
			t, err := v.Value()
			if err != nil {
				return err
			}
			info := describe(t, addValue)
			if len(info.Shape) == 1 {
				info.Shape = []int{1, info.Shape[0]}
			}
			info.IsParam = true
			c.Args.Set(p.Name, info)
		}
	}
	if n.Op == ir.Output {
		return nil
	}
	switch v := vals[n].(type) {
	case []any:
		for i, e := range v {
			c.Results.Set(fmt.Sprintf("data_out_%d", i), describe(e, addValue))
		}
	default:
		c.Results.Set("data_out_0", describe(v, addValue))
	}
	return nil
}

// isTensor reports whether an argument is a node whose value is a tensor.
func isTensor(v any, vals map[*ir.Node]any) bool {
	n, ok := v.(*ir.Node)
	if !ok {
		return false
	}
	_, ok = vals[n].(*tensors.Tensor)
	return ok
}

// resolve replaces nodes inside v by their recorded values.
func resolve(v any, vals map[*ir.Node]any) any {
	return ir.MapNodes(v, func(n *ir.Node) any { return vals[n] })
}

// describe builds the type/precision/shape entry of a value.
func describe(v any, addValue bool) *ir.ArgInfo {
	switch x := v.(type) {
	case *tensors.Tensor:
		info := &ir.ArgInfo{Shape: append([]int{}, x.Shape().Dimensions...), DType: strings.ToLower(x.DType().String())}
		info.Type, info.Precision = tensorType(x.DType())
		if addValue {
			info.Value = x
		}
		return info
	case nil:
		return &ir.ArgInfo{Type: "NoneType", Value: nil}
	case bool:
		return &ir.ArgInfo{Type: "bool", Value: x}
	case int:
		return &ir.ArgInfo{Type: "int", Value: x}
	case float64:
		return &ir.ArgInfo{Type: "float", Precision: []int{64}, Value: x}
	case string:
		return &ir.ArgInfo{Type: "str", Value: x}
	case []any:
		return &ir.ArgInfo{Type: "tuple", Shape: []int{len(x)}, Value: x}
	}
	return &ir.ArgInfo{Type: fmt.Sprintf("%T", v), Value: v}
}

// tensorType maps an element type to MASE's (type, precision).
func tensorType(dt dtypes.DType) (string, []int) {
	switch dt {
	case dtypes.Float32:
		return "float", []int{32}
	case dtypes.Float64:
		return "float", []int{64}
	case dtypes.Float16:
		return "float", []int{16}
	case dtypes.BFloat16:
		return "bfloat", []int{16}
	case dtypes.Bool:
		return "bool", []int{1}
	}
	return "integer", []int{dt.Bits()}
}
