package backend

import (
	"fmt"

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
// as XLA custom calls; Reason says why there are none, for a backend that
// might have had them.
type KernelSet struct {
	MXInt8 bool
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
	switch {
	case k.MXInt8:
		return "CUDA kernels: MXINT8 dequantisation"
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

// Builder implements compute.Backend.
func (b *kernelBackend) Builder(name string) compute.Builder {
	inner := b.Backend.Builder(name)
	if inner == nil || !b.set.MXInt8 {
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

// kernelFunction answers the fused ops gomase's kernels implement and
// delegates the rest (closures and other functions get the plain ops, so
// there the fused ops fall back to the GoMLX graph).
type kernelFunction struct {
	compute.Function
	owner *kernelBackend
}

func notImplemented(format string, args ...any) error {
	return errors.Wrapf(compute.ErrNotImplemented, format, args...)
}

// shape returns the shape of a value of this function's graph.
func (f *kernelFunction) shape(v compute.Value) (shapes.Shape, error) {
	return f.Function.Builder().OpShape(v)
}

// dequantize emits the MXINT8 kernel on int8 mantissas m (any shape) and
// their uint8 exponents e, giving bfloat16 values of m's shape.
func (f *kernelFunction) dequantize(m, e compute.Value, groupSize int) (compute.Value, error) {
	ms, err := f.shape(m)
	if err != nil {
		return nil, err
	}
	es, err := f.shape(e)
	if err != nil {
		return nil, err
	}
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
	xs, err := f.shape(x)
	if err != nil {
		return nil, err
	}
	ws, err := f.shape(weights)
	if err != nil {
		return nil, err
	}
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
	ys, err := f.shape(y)
	if err != nil {
		return nil, err
	}
	b, err := f.Function.BroadcastInDim(bias, ys, []int{last})
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
	ds, err := f.shape(data)
	if err != nil {
		return nil, err
	}
	is, err := f.shape(indices)
	if err != nil {
		return nil, err
	}
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
