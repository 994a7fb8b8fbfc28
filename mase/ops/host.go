package ops

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/gelu"
	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/kernels/sdpa"
	"github.com/gomase/gomase/mase/ir"
)

// HostPrefix starts the targets of gomase's host kernels.
const HostPrefix = "gomase."

// The host kernels' call_function targets (compiled mode's rewrites insert
// them; see package compileopt).
const (
	// HostSDPA is kernels/sdpa.FusedTensors: (q, k, v, attn_mask=, scale=,
	// seq_major=); with seq_major=True, FusedTensorsSeqMajor (q, k, v and
	// the result [batch, seq, heads, head_dim]).
	HostSDPA = HostPrefix + "sdpa_kernel"
	// HostGELU is kernels/gelu.Tensor: (x).
	HostGELU = HostPrefix + "gelu_kernel"
	// HostMXInt8 is kernels/mxint8.DequantizeWords: (mantissa_words,
	// exponent_words, numel, group_size, shape=(dims...)) → float32.
	HostMXInt8 = HostPrefix + "mxint8_dequantize"
)

// hostKernels lists gomase's host kernels. The fused attention keeps
// MASE's operator name, so operator inference reads an optimised graph as
// it reads the traced one.
func hostKernels() []Op {
	return []Op{
		{Kind: ir.CallFunction, Target: HostSDPA, MaseType: TypeBuiltinFunc, MaseOp: "scaled_dot_product_attention", Host: runSDPA},
		{Kind: ir.CallFunction, Target: HostGELU, Host: runGELU},
		{Kind: ir.CallFunction, Target: HostMXInt8, Host: runMXInt8},
	}
}

// TensorArg returns argument i of a host kernel as a tensor.
func TensorArg(fn string, args []any, i int) (*tensors.Tensor, error) {
	if i >= len(args) {
		return nil, fmt.Errorf("%s: want at least %d arguments, got %d", fn, i+1, len(args))
	}
	t, ok := args[i].(*tensors.Tensor)
	if !ok {
		return nil, fmt.Errorf("%s: argument %d is %T, want a tensor", fn, i, args[i])
	}
	return t, nil
}

// HostOnlyError is the error of lowering a host kernel's node into a
// GoMLX computation.
func HostOnlyError(target string) error {
	return fmt.Errorf("%q runs on the host (a graph break): run the graph with execute.NewSegmented or execute.NewEager, not as one computation (host functions: %s)",
		target, strings.Join(Names(ir.CallFunction, true), ", "))
}

func runMXInt8(args []any, kwargs map[string]any) (any, error) {
	var ws [2][]int32
	for i := range ws {
		t, err := TensorArg(HostMXInt8, args, i)
		if err != nil {
			return nil, err
		}
		if ws[i], err = tensors.CopyFlatData[int32](t); err != nil {
			return nil, fmt.Errorf("%s: argument %d: %w", HostMXInt8, i, err)
		}
	}
	if len(args) != 4 {
		return nil, fmt.Errorf("%s: %d arguments, want (mantissa_words, exponent_words, numel, group_size)", HostMXInt8, len(args))
	}
	n, ok1 := args[2].(int)
	gs, ok2 := args[3].(int)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s: numel %v and group_size %v must be integers", HostMXInt8, args[2], args[3])
	}
	dims := []int{n}
	if s, ok := kwargs["shape"].([]any); ok {
		dims = dims[:0]
		size := 1
		for _, d := range s {
			di, ok := d.(int)
			if !ok || di < 1 {
				return nil, fmt.Errorf("%s: shape %v: want positive integers", HostMXInt8, s)
			}
			dims = append(dims, di)
			size *= di
		}
		if size != n {
			return nil, fmt.Errorf("%s: shape %v holds %d values, not %d", HostMXInt8, s, size, n)
		}
	}
	vals, err := mxint8.DequantizeWords(ws[0], ws[1], n, gs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", HostMXInt8, err)
	}
	return tensors.FromFlatDataAndDimensions(vals, dims...), nil
}

func runSDPA(args []any, kwargs map[string]any) (any, error) {
	var qkv [3]*tensors.Tensor
	for i := range qkv {
		t, err := TensorArg(HostSDPA, args, i)
		if err != nil {
			return nil, err
		}
		qkv[i] = t
	}
	var mask *tensors.Tensor
	if m, ok := kwargs["attn_mask"]; ok && m != nil {
		if mask, ok = m.(*tensors.Tensor); !ok {
			return nil, fmt.Errorf("%s: attn_mask is %T, want a tensor", HostSDPA, m)
		}
	}
	scale := 0.0 // 1/√head_dim
	if s, ok := kwargs["scale"]; ok && s != nil {
		switch v := s.(type) {
		case float64:
			scale = v
		case int:
			scale = float64(v)
		default:
			return nil, fmt.Errorf("%s: scale is %T, want a number", HostSDPA, s)
		}
		if scale <= 0 || math.IsInf(scale, 0) || math.IsNaN(scale) {
			return nil, fmt.Errorf("%s: scale %v, want a positive finite number", HostSDPA, scale)
		}
	}
	seqMajor := false
	if v, ok := kwargs["seq_major"]; ok && v != nil {
		if seqMajor, ok = v.(bool); !ok {
			return nil, fmt.Errorf("%s: seq_major is %T, want a bool", HostSDPA, v)
		}
	}
	var out *tensors.Tensor
	var err error
	if seqMajor {
		out, err = sdpa.FusedTensorsSeqMajor(qkv[0], qkv[1], qkv[2], mask, scale)
	} else {
		out, err = sdpa.FusedTensors(qkv[0], qkv[1], qkv[2], mask, scale, false)
	}
	if err != nil {
		return nil, fmt.Errorf("%w (switch the sdpa_kernel rewrite off for this graph)", err)
	}
	return out, nil
}

func runGELU(args []any, _ map[string]any) (any, error) {
	x, err := TensorArg(HostGELU, args, 0)
	if err != nil {
		return nil, err
	}
	y, err := gelu.Tensor(x)
	if err != nil {
		return nil, fmt.Errorf("%w (switch the gelu_kernel rewrite off for this graph)", err)
	}
	return y, nil
}
