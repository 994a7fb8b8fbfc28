package ops

import (
	"fmt"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/nn/packed"
	"github.com/gomase/gomase/mase/nn/quantized"
	"github.com/gomase/gomase/mase/quant"
)

// zeroCost is the cost of an entry that computes and moves nothing (it is
// never called for views and no-ops, whose class says so).
func zeroCost(CostInput) (Cost, error) { return Cost{}, nil }

// perElement is an element-wise op of k scalar operations per output
// element; its bytes are its tensors read and written. A node whose value
// is not a tensor (Python arithmetic on shape values) costs nothing.
func perElement(k int64) CostFunc {
	return func(in CostInput) (Cost, error) {
		if len(in.Outputs) == 0 {
			return Cost{}, nil
		}
		c := in.moved()
		for _, o := range in.Outputs {
			c.ElementwiseFLOPs += k * o.Elements()
		}
		return c, nil
	}
}

// fillCost is ones, zeros and arange: no arithmetic, the output written.
func fillCost(in CostInput) (Cost, error) { return in.moved(), nil }

// convertCost is to() and float(): a dtype conversion, which moves the
// tensor (read and written) and counts no FLOPs; to the tensor's own dtype
// it returns its input and costs nothing.
func convertCost(in CostInput) (Cost, error) {
	out, err := in.Out()
	if err != nil {
		return Cost{}, err
	}
	x, err := in.In(0)
	if err != nil {
		return Cost{}, err
	}
	if x.DType == out.DType {
		return Cost{}, nil
	}
	return in.moved(), nil
}

// matmulCost is torch.matmul with batch dimensions broadcast: 2·K FLOPs
// per output element, K the contracted axis (the last of the first
// operand), i.e. 2·batch·M·N·K as FlopCounterMode counts the bmm it
// becomes. A 1-D operand is counted the same way (FlopCounterMode sees
// those as dot or mv, which it does not count).
func matmulCost(in CostInput) (Cost, error) {
	a, b := in.Arg(0), in.Arg(1)
	if a == nil || b == nil {
		return Cost{}, fmt.Errorf("node %s: matmul needs two tensor operands in the metadata", in.name())
	}
	o, err := in.Out()
	if err != nil {
		return Cost{}, err
	}
	c := in.moved()
	c.FLOPs = 2 * o.Elements() * a.Last()
	return c, nil
}

// linearFnCost is F.linear(x, W, b): 2·in_features FLOPs per output
// element (FlopCounterMode's addmm counts its mm only); the bias add, when
// there is one, is 1 element-wise FLOP per output element.
func linearFnCost(in CostInput) (Cost, error) {
	x, o, err := in.firstAndOut()
	if err != nil {
		return Cost{}, err
	}
	c := in.moved()
	c.FLOPs = 2 * o.Elements() * x.Last()
	if in.Arg(2) != nil || in.Kwarg("bias") != nil {
		c.ElementwiseFLOPs = o.Elements()
	}
	return c, nil
}

// SoftmaxPerElement is softmax's element-wise FLOPs per element: the
// running max (1), the subtraction (1), exp (1), the sum (1) and the
// division (1).
const SoftmaxPerElement = 5

// sdpaCost is scaled_dot_product_attention on q [..., Sq, D], k [..., Sk,
// D], v [..., Sk, Dv]: FlopCounterMode's count of its two batched matmuls,
// 2·BH·Sq·Sk·D + 2·BH·Sq·Sk·Dv (BH the product of q's leading axes), the
// same with or without a mask. Element-wise, per score (BH·Sq·Sk): the
// scale (1), the mask add when there is a mask (1), softmax
// (SoftmaxPerElement) and, in train mode with dropout_p > 0, dropout (1).
// Bytes: q, k, v and the mask read, the output written; the scores are not
// materialised (one fused kernel).
func sdpaCost(in CostInput) (Cost, error) {
	q, k, v := in.Arg(0), in.Arg(1), in.Arg(2)
	if q == nil || k == nil || v == nil || len(q.Shape) < 2 || len(k.Shape) < 2 || len(v.Shape) < 2 {
		return Cost{}, fmt.Errorf("node %s: attention needs q, k, v tensors of rank ≥ 2 in the metadata", in.name())
	}
	seqAxis := 2 // from the end: [..., seq, head_dim]
	if sm, _ := in.Kwargs["seq_major"].(bool); sm {
		if len(q.Shape) != 4 || len(k.Shape) != 4 {
			return Cost{}, fmt.Errorf("node %s: seq-major attention needs rank-4 q, k, v in the metadata", in.name())
		}
		seqAxis = 3 // [batch, seq, heads, head_dim]
	}
	sq, d := int64(q.Shape[len(q.Shape)-seqAxis]), q.Last()
	sk, dv := int64(k.Shape[len(k.Shape)-seqAxis]), v.Last()
	bh := q.Elements() / (sq * d)
	scores := bh * sq * sk
	c := in.moved()
	c.FLOPs = 2*scores*d + 2*scores*dv
	perScore := int64(1 + SoftmaxPerElement)
	if in.Kwarg("attn_mask") != nil {
		perScore++
	}
	if p, ok := asFloat(in.Kwargs["dropout_p"]); ok && p > 0 && in.Training {
		perScore++
	}
	c.ElementwiseFLOPs = perScore * scores
	return c, nil
}

// mxint8DequantCost is the MXINT8 dequantisation host kernel: one
// multiply per element (mantissa × 2^exponent); bytes: the packed words
// read, the values written.
func mxint8DequantCost(in CostInput) (Cost, error) { return perElement(1)(in) }

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// activationFLOPs are the element-wise FLOPs per element of each
// activation (by mase_op; functions and methods use the same): an
// elementary operation is 1, a composite counts its steps.
var activationFLOPs = map[string]int64{
	"relu":        1, // max(x, 0)
	"relu6":       2, // min(max(x, 0), 6)
	"leaky_relu":  2, // x·slope, then the max
	"tanh":        1,
	"sigmoid":     3, // 1 / (1 + exp(−x)): exp, add, divide
	"silu":        4, // x · sigmoid(x)
	"gelu":        5, // 0.5 · x · (1 + erf(x/√2)): divide, erf, add, two multiplies
	"elu":         3, // x > 0 ? x : α(exp(x) − 1): compare, exp, subtract-multiply
	"selu":        4, // elu and the scale
	"hardtanh":    2, // clamp: two compares
	"hardswish":   4, // x · clamp(x + 3, 0, 6) / 6
	"hardsigmoid": 3, // clamp(x/6 + 1/2, 0, 1)
	"softplus":    3, // log(1 + exp(x))
	"softsign":    3, // x / (1 + |x|)
	"identity":    0,
	"erf":         1,
	"exp":         1,
	"sqrt":        1,
	"neg":         1,
}

// ---- Module costs ----

// linearModuleCost is a Linear (and every module declaring the linear
// operator): 2·in_features FLOPs per output element, in_features the
// input's last axis, as FlopCounterMode counts the addmm. Element-wise:
// the bias add (1 per output element) when there is a bias; for a
// quantised Linear (quantized.Linear) 1 per element of each quantised
// operand (data_in, weight, bias, data_out: a quantiser is counted as one
// operation per element it rounds); for QLinearPacked the MXINT8
// dequantisation of the weight and bias (1 per element); for LoRALinear the
// adapter's two matmuls go to FLOPs (2·rows·in·r + 2·rows·r·out) and its
// scale and add to element-wise (2 per output element). Bytes: the input,
// every parameter and buffer (a packed layer's words), the output.
func linearModuleCost(in CostInput) (Cost, error) {
	x, o, err := in.firstAndOut()
	if err != nil {
		return Cost{}, err
	}
	c := in.moved()
	outN := o.Elements()
	c.FLOPs = 2 * outN * x.Last()
	hasBias := in.Param("bias") != nil || in.Param("linear.bias") != nil
	switch m := in.Module.(type) {
	case *packed.Linear:
		hasBias = m.Bias
		c.ElementwiseFLOPs += int64(m.InFeatures) * int64(m.OutFeatures)
		if m.Bias {
			c.ElementwiseFLOPs += int64(m.OutFeatures)
		}
	case *quantized.Linear:
		cfg := m.Config
		if !cfg.Bypass {
			for _, q := range []struct {
				spec *quant.Spec
				n    int64
			}{{cfg.DataIn, x.Elements()}, {cfg.Weight, int64(m.InFeatures) * int64(m.OutFeatures)}, {cfg.DataOut, outN}} {
				if q.spec != nil {
					c.ElementwiseFLOPs += q.n
				}
			}
			if cfg.Bias != nil && m.Bias {
				c.ElementwiseFLOPs += int64(m.OutFeatures)
			}
		}
	}
	if a, b := in.Param("lora_a.weight"), in.Param("lora_b.weight"); a != nil && b != nil && len(a.Shape) == 2 && len(b.Shape) == 2 {
		rows := outN / o.Last()
		r := int64(a.Shape[0])
		c.FLOPs += 2*rows*x.Last()*r + 2*rows*r*o.Last()
		c.ElementwiseFLOPs += 2 * outN
		if m, ok := in.Module.(*nn.LoRALinear); ok && in.Training && m.Dropout > 0 {
			c.ElementwiseFLOPs += x.Elements()
		}
	}
	if hasBias {
		c.ElementwiseFLOPs += outN
	}
	return c, nil
}

// convModuleCost is a convolution (Conv1d, Conv2d): with weight [out,
// in/groups, k...], 2·(in/groups)·∏k FLOPs per output element, as
// FlopCounterMode counts aten.convolution; stride, padding and dilation
// enter through the output's shape, groups through the weight's. The bias
// add is 1 element-wise FLOP per output element.
func convModuleCost(in CostInput) (Cost, error) {
	o, err := in.Out()
	if err != nil {
		return Cost{}, err
	}
	w := in.Param("weight")
	var perOut int64
	switch {
	case w != nil && len(w.Shape) >= 2:
		perOut = numel(w.Shape[1:])
	default:
		m, ok := in.Module.(*nn.Conv2d)
		if !ok {
			return Cost{}, fmt.Errorf("node %s: convolution without a weight in its metadata", in.name())
		}
		perOut = int64(m.InChannels/m.Groups) * int64(m.KernelSize[0]) * int64(m.KernelSize[1])
	}
	c := in.moved()
	c.FLOPs = 2 * o.Elements() * perOut
	if in.Param("bias") != nil {
		c.ElementwiseFLOPs = o.Elements()
	}
	return c, nil
}

// embeddingModuleCost is an embedding lookup (Embedding and the packed
// QEmbeddingPacked): 0 FLOPs of either kind (a gather). Bytes read: the
// indices and the rows gathered (one row of the table per index, at the
// table's storage size: for a packed table its words' share), not the
// whole table; written: the output.
func embeddingModuleCost(in CostInput) (Cost, error) {
	ids, o, err := in.firstAndOut()
	if err != nil {
		return Cost{}, err
	}
	var tableElems, tableBytes int64
	for _, p := range in.Params {
		tableBytes += p.Bytes()
	}
	switch m := in.Module.(type) {
	case *packed.Embedding:
		tableElems = int64(m.NumEmbeddings) * int64(m.EmbeddingDim)
	default:
		w := in.Param("weight")
		if w == nil {
			return Cost{}, fmt.Errorf("node %s: embedding without a weight in its metadata", in.name())
		}
		tableElems, tableBytes = w.Elements(), w.Bytes()
	}
	rows := int64(0)
	if tableElems > 0 {
		rows = (o.Elements()*tableBytes + tableElems - 1) / tableElems
	}
	return Cost{BytesRead: ids.Bytes() + rows, BytesWritten: o.Bytes()}, nil
}

// normCost is a normalisation over the input: fvcore's convention, per
// element 4 operations to normalise (subtract the mean, square, sum, scale
// by 1/σ) and 1 more for the affine weight and bias: LayerNorm and
// GroupNorm 5, InstanceNorm2d 4 (no affine by default).
func normCost(perElem int64) CostFunc { return perInput(perElem) }

// batchNormCost is BatchNorm: in eval mode the running statistics folded
// into one multiply and one add per element (2, fvcore's convention); in
// train mode the batch statistics as normCost (5).
func batchNormCost(in CostInput) (Cost, error) {
	if in.Training {
		return perInput(5)(in)
	}
	return perInput(2)(in)
}

// perInput is k element-wise FLOPs per element of the first input.
func perInput(k int64) CostFunc {
	return func(in CostInput) (Cost, error) {
		x, err := in.In(0)
		if err != nil {
			return Cost{}, err
		}
		c := in.moved()
		c.ElementwiseFLOPs = k * x.Elements()
		return c, nil
	}
}

// maxPoolCost is max pooling: MaxPool2d compares kernel² values per output
// element; pooling modules outside gomase's own (MaxPool1d, the adaptive
// ones) are counted as one compare per input element.
func maxPoolCost(in CostInput) (Cost, error) {
	o, err := in.Out()
	if err != nil {
		return Cost{}, err
	}
	if m, ok := in.Module.(*nn.MaxPool2d); ok {
		c := in.moved()
		c.ElementwiseFLOPs = int64(m.KernelSize) * int64(m.KernelSize) * o.Elements()
		return c, nil
	}
	return perInput(1)(in)
}

// avgPoolCost is average pooling: one add per input element and one
// divide per output element.
func avgPoolCost(in CostInput) (Cost, error) {
	x, o, err := in.firstAndOut()
	if err != nil {
		return Cost{}, err
	}
	c := in.moved()
	c.ElementwiseFLOPs = x.Elements() + o.Elements()
	return c, nil
}

// crossEntropyCost is CrossEntropyLoss on logits [N, C]: a log-softmax
// (SoftmaxPerElement per logit) and one pick-and-add per target.
func crossEntropyCost(in CostInput) (Cost, error) {
	x, err := in.In(0)
	if err != nil {
		return Cost{}, err
	}
	c := in.moved()
	c.ElementwiseFLOPs = SoftmaxPerElement * x.Elements()
	if t, err := in.In(1); err == nil {
		c.ElementwiseFLOPs += t.Elements()
	}
	return c, nil
}

// moduleCost gives each module class of the table its class and cost.
func moduleCost(class, maseOp string) (Class, CostFunc) {
	switch class {
	case "Identity":
		return ClassNoOp, zeroCost
	case "Dropout":
		return ClassEvalNoOp, perElement(1) // train mode: the mask multiply
	case "Flatten":
		return ClassView, zeroCost
	case "Linear":
		return ClassCompute, linearModuleCost
	case "Conv1d", "Conv2d":
		return ClassCompute, convModuleCost
	case "Embedding":
		return ClassCompute, embeddingModuleCost
	case "LayerNorm", "GroupNorm":
		return ClassCompute, normCost(5)
	case "InstanceNorm2d":
		return ClassCompute, normCost(4)
	case "BatchNorm1d", "BatchNorm2d":
		return ClassCompute, batchNormCost
	case "Softmax":
		return ClassCompute, perElement(SoftmaxPerElement)
	case "CrossEntropyLoss":
		return ClassCompute, crossEntropyCost
	case "MaxPool1d", "MaxPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d":
		return ClassCompute, maxPoolCost
	case "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d":
		return ClassCompute, avgPoolCost
	}
	if k, ok := activationFLOPs[maseOp]; ok {
		return ClassCompute, perElement(k)
	}
	return ClassCompute, nil
}

// functionCosts gives the built-in functions and methods their classes
// and costs (keyed like the table).
func functionCosts() map[key]struct {
	class Class
	cost  CostFunc
} {
	type cc = struct {
		class Class
		cost  CostFunc
	}
	fn := func(t string) key { return key{ir.CallFunction, t} }
	method := func(t string) key { return key{ir.CallMethod, t} }
	view := cc{ClassView, zeroCost}
	m := map[key]cc{
		// Views: no kernel in PyTorch, folded by eager mode. contiguous()
		// and a reshape after a permute would copy in PyTorch; gomase's
		// lowerings return their input, so they count as views here too.
		method("view"): view, method("reshape"): view, method("permute"): view, method("transpose"): view,
		method("unsqueeze"): view, method("flatten"): view, method("contiguous"): view, method("size"): view,
		fn("getitem"): view, fn("flatten"): view, fn("unsqueeze"): view, fn("transpose"): view,

		// Element-wise arithmetic: 1 per output element.
		fn("add"): {ClassCompute, perElement(1)}, fn("sub"): {ClassCompute, perElement(1)},
		fn("mul"): {ClassCompute, perElement(1)}, fn("truediv"): {ClassCompute, perElement(1)},
		fn("div"): {ClassCompute, perElement(1)},

		fn("matmul"):                       {ClassCompute, matmulCost},
		fn("linear"):                       {ClassCompute, linearFnCost},
		fn("scaled_dot_product_attention"): {ClassCompute, sdpaCost},
		fn(HostSDPA):                       {ClassCompute, sdpaCost},
		fn("softmax"):                      {ClassCompute, perElement(SoftmaxPerElement)},
		method("softmax"):                  {ClassCompute, perElement(SoftmaxPerElement)},
		fn("dropout"):                      {ClassEvalNoOp, perElement(1)},
		fn("ones"):                         {ClassCompute, fillCost},
		fn("zeros"):                        {ClassCompute, fillCost},
		fn("arange"):                       {ClassCompute, fillCost},
		method("float"):                    {ClassCompute, convertCost},
		method("to"):                       {ClassCompute, convertCost},
		fn(HostGELU):                       {ClassCompute, perElement(activationFLOPs["gelu"])},
		fn(HostMXInt8):                     {ClassCompute, mxint8DequantCost},
	}
	for _, name := range []string{"relu", "leaky_relu", "tanh", "gelu", "sigmoid", "erf", "exp", "sqrt", "neg"} {
		m[fn(name)] = cc{ClassCompute, perElement(activationFLOPs[name])}
	}
	for _, name := range []string{"relu", "leaky_relu", "tanh"} {
		m[method(name)] = cc{ClassCompute, perElement(activationFLOPs[name])}
	}
	return m
}

// withCosts fills the class and cost of the built-in entries.
func withCosts(ops []Op) []Op {
	fc := functionCosts()
	for i := range ops {
		op := &ops[i]
		if op.Kind == ir.CallModule {
			op.Class, op.Cost = moduleCost(op.Target, op.MaseOp)
			continue
		}
		if c, ok := fc[key{op.Kind, op.Target}]; ok {
			op.Class, op.Cost = c.class, c.cost
		}
	}
	return ops
}
