package backend

import (
	"fmt"
	"maps"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/pkg/errors"

	"github.com/gomase/gomase/kernels/cuda"
)

// QuantMXInt8 is the quantisation scheme under which gomase's graphs ask a
// backend with CUDA kernels (see Kernels) for its MXINT8 kernel, through
// GoMLX's fused quantised ops:
//
//   - FusedQuantizedDense(x, weights, bias, q, ActivationNone): weights are
//     int8 mantissas [N, K] (row-major, N output features), q.Scale the
//     uint8 exponents of their groups of q.BlockSize consecutive values
//     (flat [N·K/BlockSize]); y = x · dequant(weights)ᵀ + bias, in x's dtype.
//   - QuantizedEmbeddingLookup(data, indices, q): data are int8 mantissas
//     [V, D] whose rows own whole groups, q.Scale the exponents [V,
//     D/BlockSize], indices [..., 1]; the looked-up rows come back
//     dequantised, bfloat16 [..., D].
//
// The value is outside GoMLX's schemes; a backend without the kernel
// returns compute.ErrNotImplemented, and the caller builds the GoMLX graph.
const QuantMXInt8 compute.QuantizationScheme = 0x4d58 // "MX"

// KernelsEnv switches the CUDA kernels off when set to "off" (to time a
// GPU with and without them).
const KernelsEnv = "GOMASE_CUDA_KERNELS"

// KernelSet says which of gomase's CUDA kernels a backend's graphs call
// as XLA custom calls, and why any it might have had is not in use.
type KernelSet struct {
	// MXInt8: QLinearPacked and QEmbeddingPacked dequantise with the
	// MXINT8 kernel.
	MXInt8 bool
	// SDPA: the backend's fused attention (sdpa.FusedGraph) runs the
	// flash-attention kernel where cuDNN's fused op does not apply
	// (float32, or half precision cuDNN refuses).
	SDPA bool
	// Reason says why a kernel is not in use (no driver, a failed probe).
	Reason string
}

// Kernels reports the CUDA kernels that graphs built on be call: those
// registered when an xla:cuda backend opened. Other backends have none
// (and no Reason: they run the GoMLX graphs or the Go kernels).
func Kernels(be compute.Backend) KernelSet {
	if kb, ok := Unwrap(be).(*kernelBackend); ok {
		return kb.set
	}
	return KernelSet{}
}

// String says which kernels are in use, or why none.
func (k KernelSet) String() string {
	var names []string
	if k.MXInt8 {
		names = append(names, "MXINT8 dequantisation")
	}
	if k.SDPA {
		names = append(names, "flash attention")
	}
	switch {
	case len(names) > 0 && k.Reason != "":
		return "CUDA kernels: " + strings.Join(names, ", ") + " (" + k.Reason + ")"
	case len(names) > 0:
		return "CUDA kernels: " + strings.Join(names, ", ")
	case k.Reason != "":
		return "CUDA kernels: none (" + k.Reason + ")"
	}
	return "CUDA kernels: none"
}

// emitFunc adds call to fn's graph with operands and returns its results.
type emitFunc func(fn compute.Function, call cuda.Call, operands ...compute.Value) ([]compute.Value, error)

// kernelBackend is a backend whose graphs' main functions answer the
// QuantMXInt8 fused ops with custom calls (emit); everything else is the
// backend inside.
type kernelBackend struct {
	compute.Backend
	set  KernelSet
	emit emitFunc
}

// withKernels wraps be so that its graphs call the kernels in set through
// emit; with no kernel in set the wrapper only carries the Reason.
func withKernels(be compute.Backend, set KernelSet, emit emitFunc) compute.Backend {
	return &kernelBackend{Backend: be, set: set, emit: emit}
}

// Capabilities implements compute.Backend: with the attention kernel the
// backend has a fused attention, and no fused backward (gradients go
// through the GoMLX decomposition: the kernel's outputs carry no state for
// cuDNN's).
func (b *kernelBackend) Capabilities() compute.Capabilities {
	caps := b.Backend.Capabilities()
	if !b.set.SDPA {
		return caps
	}
	caps.Operations = maps.Clone(caps.Operations)
	caps.Operations[compute.OpTypeFusedScaledDotProductAttention] = true
	caps.Operations[compute.OpTypeFusedScaledDotProductAttentionVJP] = false
	return caps
}

// Builder implements compute.Backend.
func (b *kernelBackend) Builder(name string) compute.Builder {
	inner := b.Backend.Builder(name)
	if inner == nil || (!b.set.MXInt8 && !b.set.SDPA) {
		return inner
	}
	return &kernelBuilder{Builder: inner, owner: b}
}

type kernelBuilder struct {
	compute.Builder
	owner *kernelBackend
	main  *kernelFunction
}

// Main implements compute.Builder: the main function with the kernels.
func (kb *kernelBuilder) Main() compute.Function {
	if kb.main == nil {
		kb.main = &kernelFunction{Function: kb.Builder.Main(), owner: kb.owner}
	}
	return kb.main
}

// NewFunction implements compute.Builder: a function with the kernels.
func (kb *kernelBuilder) NewFunction(name string) (compute.Function, error) {
	fn, err := kb.Builder.NewFunction(name)
	if err != nil {
		return nil, err
	}
	return &kernelFunction{Function: fn, owner: kb.owner}, nil
}

// kernelFunction answers the fused ops gomase's kernels implement and
// delegates the rest. Its closures have the kernels too (a loop's body
// calls them); the ops that take functions get the backend's own.
type kernelFunction struct {
	compute.Function
	owner *kernelBackend
}

// inner returns the backend's function inside fn.
func inner(fn compute.Function) compute.Function {
	if kf, ok := fn.(*kernelFunction); ok {
		return kf.Function
	}
	return fn
}

// Closure implements compute.Function: a closure with the kernels.
func (f *kernelFunction) Closure() (compute.Function, error) {
	fn, err := f.Function.Closure()
	if err != nil {
		return nil, err
	}
	return &kernelFunction{Function: fn, owner: f.owner}, nil
}

// Call implements compute.Function.
func (f *kernelFunction) Call(fn compute.Function, inputs ...compute.Value) ([]compute.Value, error) {
	return f.Function.Call(inner(fn), inputs...)
}

// Sort implements compute.Function.
func (f *kernelFunction) Sort(comparator compute.Function, axis int, isStable bool, inputs ...compute.Value) ([]compute.Value, error) {
	return f.Function.Sort(inner(comparator), axis, isStable, inputs...)
}

// While implements compute.Function.
func (f *kernelFunction) While(cond, body compute.Function, initialState ...compute.Value) ([]compute.Value, error) {
	return f.Function.While(inner(cond), inner(body), initialState...)
}

// If implements compute.Function.
func (f *kernelFunction) If(pred compute.Value, trueBranch, falseBranch compute.Function) ([]compute.Value, error) {
	return f.Function.If(pred, inner(trueBranch), inner(falseBranch))
}

func notImplemented(format string, args ...any) error {
	return errors.Wrapf(compute.ErrNotImplemented, format, args...)
}

// shapes returns the shapes of values of this function's graph.
func (f *kernelFunction) shapes(vs ...compute.Value) ([]shapes.Shape, error) {
	out := make([]shapes.Shape, len(vs))
	for i, v := range vs {
		s, err := f.Function.Builder().OpShape(v)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// dequantize emits the MXINT8 kernel on int8 mantissas m (any shape) and
// their uint8 exponents e, giving bfloat16 values of m's shape.
func (f *kernelFunction) dequantize(m, e compute.Value, groupSize int) (compute.Value, error) {
	ss, err := f.shapes(m, e)
	if err != nil {
		return nil, err
	}
	ms, es := ss[0], ss[1]
	n := ms.Size()
	call, err := cuda.MXInt8Call(n, groupSize)
	if err != nil {
		return nil, err
	}
	if ms.DType != dtypes.Int8 || es.DType != dtypes.Uint8 || es.Size() != call.Operands[1].Size() {
		return nil, fmt.Errorf("MXINT8 kernel: mantissas %s and exponents %s (allowed: int8 values and uint8 exponents, one per group of %d)", ms, es, groupSize)
	}
	if m, err = f.Function.Reshape(m, n); err != nil {
		return nil, err
	}
	if e, err = f.Function.Reshape(e, call.Operands[1].Dimensions...); err != nil {
		return nil, err
	}
	outs, err := f.owner.emit(f.Function, call, m, e)
	if err != nil {
		return nil, err
	}
	return f.Function.Reshape(outs[0], ms.Dimensions...)
}

// FusedQuantizedDense implements compute.FusedOps for QuantMXInt8 (see
// there); other schemes go to the backend.
func (f *kernelFunction) FusedQuantizedDense(x, weights, bias compute.Value, q *compute.Quantization, act compute.ActivationType) (compute.Value, error) {
	if q == nil || q.Scheme != QuantMXInt8 {
		return f.Function.FusedQuantizedDense(x, weights, bias, q, act)
	}
	if act != compute.ActivationNone {
		return nil, notImplemented("MXINT8 dense with activation %s", act)
	}
	ss, err := f.shapes(x, weights)
	if err != nil {
		return nil, err
	}
	xs, ws := ss[0], ss[1]
	if ws.Rank() != 2 || xs.Rank() < 1 || xs.Dimensions[xs.Rank()-1] != ws.Dimensions[1] {
		return nil, fmt.Errorf("MXINT8 dense: x %s and weights %s (allowed: weights [N, K] and x [..., K])", xs, ws)
	}
	w, err := f.dequantize(weights, q.Scale, q.BlockSize)
	if err != nil {
		return nil, err
	}
	if xs.DType != dtypes.BFloat16 {
		if w, err = f.Function.ConvertDType(w, xs.DType); err != nil {
			return nil, err
		}
	}
	last := xs.Rank() - 1
	y, err := f.Function.DotGeneral(x, []int{last}, nil, w, []int{1}, nil, compute.DotGeneralConfig{})
	if err != nil || bias == nil {
		return y, err
	}
	ys, err := f.shapes(y)
	if err != nil {
		return nil, err
	}
	b, err := f.Function.BroadcastInDim(bias, ys[0], []int{last})
	if err != nil {
		return nil, err
	}
	return f.Function.Add(y, b)
}

// QuantizedEmbeddingLookup implements compute.FusedOps for QuantMXInt8
// (see there); other schemes go to the backend.
func (f *kernelFunction) QuantizedEmbeddingLookup(data, indices compute.Value, q *compute.Quantization) (compute.Value, error) {
	if q == nil || q.Scheme != QuantMXInt8 {
		return f.Function.QuantizedEmbeddingLookup(data, indices, q)
	}
	ss, err := f.shapes(data, indices)
	if err != nil {
		return nil, err
	}
	ds, is := ss[0], ss[1]
	gs := q.BlockSize
	if ds.Rank() != 2 || gs < 1 || ds.Dimensions[1]%gs != 0 || is.Rank() < 1 || is.Dimensions[is.Rank()-1] != 1 {
		return nil, fmt.Errorf("MXINT8 embedding: table %s, indices %s, groups of %d (allowed: a [V, D] table whose rows own whole groups, indices [..., 1])", ds, is, gs)
	}
	rows := func(v compute.Value, width int) (compute.Value, error) {
		return f.Function.Gather(v, indices, is.Rank()-1, []int{is.Rank() - 1}, []int{0}, []int{0}, []int{1, width}, false)
	}
	d := ds.Dimensions[1]
	m, err := rows(data, d)
	if err != nil {
		return nil, err
	}
	scale, err := f.Function.Reshape(q.Scale, ds.Dimensions[0], d/gs)
	if err != nil {
		return nil, err
	}
	e, err := rows(scale, d/gs)
	if err != nil {
		return nil, err
	}
	return f.dequantize(m, e, gs)
}

// FusedScaledDotProductAttention implements compute.FusedOps: cuDNN's fused
// op (the backend's) for float16/bfloat16 when it takes the attention (see
// halfPrecisionBackendOp), the flash-attention kernel for float32 or the
// half-precision attentions it does not take (BHSD layout, as many
// key/value heads as query heads, head_dim ≤ 128, no causal flag, bias or
// sequence lengths), the backend's op otherwise.
func (f *kernelFunction) FusedScaledDotProductAttention(q, k, v compute.Value, layout compute.AttentionAxesLayout,
	opts *compute.ScaledDotProductAttentionConfig) (compute.Value, []compute.Value, error) {
	backendOp := func() (compute.Value, []compute.Value, error) {
		return f.Function.FusedScaledDotProductAttention(q, k, v, layout, opts)
	}
	if !f.owner.set.SDPA {
		return backendOp()
	}
	call, cfg, operands, err := f.sdpaCall(q, k, v, layout, opts)
	if err != nil {
		return nil, nil, err
	}
	if call == nil {
		return backendOp()
	}
	if cfg.DType != dtypes.Float32 {
		// cuDNN takes half precision: prefer it (on an H200 it runs the
		// masked float16 attention in half the kernel's time).
		if out, states, err := f.halfPrecisionBackendOp(q, k, v, layout, opts, cfg); err == nil {
			return out, states, nil
		}
	}
	outs, err := f.owner.emit(f.Function, *call, operands...)
	if err != nil {
		return nil, nil, err
	}
	return outs[0], nil, nil
}

// halfPrecisionBackendOp is the backend's fused op (cuDNN on CUDA) for a
// half-precision attention the kernel would take (c): unmasked as it
// is, masked with the additive mask as a bias of the scores' full shape
// [B, H, SeqQ, SeqK] in q's dtype (cuDNN takes no mask operand, and a
// bias only for seq_q = seq_k). An error means the backend does not take
// it.
func (f *kernelFunction) halfPrecisionBackendOp(q, k, v compute.Value, layout compute.AttentionAxesLayout,
	opts *compute.ScaledDotProductAttentionConfig, c cuda.SDPAConfig) (compute.Value, []compute.Value, error) {
	if opts == nil || opts.Mask == nil {
		return f.Function.FusedScaledDotProductAttention(q, k, v, layout, opts)
	}
	if c.SeqQ != c.SeqK {
		return nil, nil, fmt.Errorf("a bias needs seq_q = seq_k (have %d, %d)", c.SeqQ, c.SeqK)
	}
	bias := opts.Mask
	ms, err := f.shapes(bias)
	if err != nil {
		return nil, nil, err
	}
	if ms[0].DType != c.DType {
		if bias, err = f.Function.ConvertDType(bias, c.DType); err != nil {
			return nil, nil, err
		}
	}
	full := shapes.Make(c.DType, c.Batch, c.Heads, c.SeqQ, c.SeqK)
	if bias, err = f.Function.BroadcastInDim(bias, full, []int{0, 1, 2, 3}); err != nil {
		return nil, nil, err
	}
	withBias := *opts
	withBias.Mask, withBias.Bias = nil, bias
	return f.Function.FusedScaledDotProductAttention(q, k, v, layout, &withBias)
}

// sdpaCall returns the kernel's call, its configuration and operands for
// an attention, or a nil call when the kernel does not take it.
func (f *kernelFunction) sdpaCall(q, k, v compute.Value, layout compute.AttentionAxesLayout,
	opts *compute.ScaledDotProductAttentionConfig) (*cuda.Call, cuda.SDPAConfig, []compute.Value, error) {
	if layout != compute.AttentionAxesLayoutBHSD {
		return nil, cuda.SDPAConfig{}, nil, nil
	}
	var o compute.ScaledDotProductAttentionConfig
	if opts != nil {
		o = *opts
	}
	if o.Causal || o.Bias != nil || o.QuerySeqLen != nil || o.KeyValueSeqLen != nil {
		return nil, cuda.SDPAConfig{}, nil, nil
	}
	ss, err := f.shapes(q, k, v)
	if err != nil {
		return nil, cuda.SDPAConfig{}, nil, err
	}
	qs, ks, vs := ss[0], ss[1], ss[2]
	if qs.Rank() != 4 || !ks.Equal(vs) || ks.Rank() != 4 || ks.DType != qs.DType ||
		ks.Dimensions[0] != qs.Dimensions[0] || ks.Dimensions[1] != qs.Dimensions[1] || ks.Dimensions[3] != qs.Dimensions[3] {
		return nil, cuda.SDPAConfig{}, nil, nil
	}
	cfg := cuda.SDPAConfig{Batch: qs.Dimensions[0], Heads: qs.Dimensions[1], SeqQ: qs.Dimensions[2], SeqK: ks.Dimensions[2],
		HeadDim: qs.Dimensions[3], DType: qs.DType, Scale: float32(o.Scale)}
	operands := []compute.Value{q, k, v}
	if o.Mask != nil {
		mss, err := f.shapes(o.Mask)
		if err != nil {
			return nil, cuda.SDPAConfig{}, nil, err
		}
		ms := mss[0]
		if !ms.DType.IsFloat() || ms.Rank() != 4 {
			return nil, cuda.SDPAConfig{}, nil, nil // boolean or lower-rank masks: the backend's op
		}
		cfg.MaskDims = ms.Dimensions
		mask := o.Mask
		if ms.DType != dtypes.Float32 {
			if mask, err = f.Function.ConvertDType(mask, dtypes.Float32); err != nil {
				return nil, cuda.SDPAConfig{}, nil, err
			}
		}
		operands = append(operands, mask)
	}
	call, err := cuda.SDPACall(cfg)
	if err != nil {
		return nil, cuda.SDPAConfig{}, nil, nil // a size or dtype the kernel does not take
	}
	return &call, cfg, operands, nil
}
