package sdpa

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/internal/hostout"
)

// FusedTensors runs the fused kernel (Fused, or FusedFloat16) on GoMLX
// tensors, on the host: the way a graph executor runs attention on the Go
// backend, which takes no custom kernels, as a "graph break" between
// compiled segments.
//
// q is [batch, heads, seq_q, head_dim], k and v are
// [batch, heads, seq_k, head_dim], all Float32 or all Float16; the result
// has q's shape and dtype. mask is nil or a key-padding mask of shape
// [batch, seq_k] or [batch, 1, 1, seq_k] (BERT's extended mask): Bool
// (true = attend) or Float32/Float16/Float64 (added to the scaled scores).
// scale 0 selects 1/√head_dim; causal restricts query i to keys j ≤ i.
func FusedTensors(q, k, v, mask *tensors.Tensor, scale float64, causal bool) (*tensors.Tensor, error) {
	return fusedTensors("FusedTensors", q, k, v, mask, &Options{Scale: scale, Causal: causal})
}

// FusedTensorsSeqMajor is FusedTensors (not causal) on q
// [batch, seq_q, heads, head_dim] and k, v [batch, seq_k, heads, head_dim],
// the result in q's layout: attention read straight from the Linear
// projections split into heads, and written in the layout the output
// projection reads, with no transposes on either side.
func FusedTensorsSeqMajor(q, k, v, mask *tensors.Tensor, scale float64) (*tensors.Tensor, error) {
	return fusedTensors("FusedTensorsSeqMajor", q, k, v, mask, &Options{Scale: scale, SeqMajor: true})
}

// fusedTensors is FusedTensors and FusedTensorsSeqMajor (fn names the
// caller in errors); o holds the scale and the flags.
func fusedTensors(fn string, q, k, v, mask *tensors.Tensor, o *Options) (*tensors.Tensor, error) {
	if q == nil || k == nil || v == nil {
		return nil, fmt.Errorf("sdpa.%s: q, k and v must all be given", fn)
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	seqAxis, headAxis, layout := 2, 1, "[batch, heads, seq_q, head_dim] and k, v both [batch, heads, seq_k, head_dim]"
	if o.SeqMajor {
		seqAxis, headAxis, layout = 1, 2, "[batch, seq_q, heads, head_dim] and k, v both [batch, seq_k, heads, head_dim]"
	}
	if qs.Rank() != 4 || !ks.Equal(vs) || ks.Rank() != 4 ||
		ks.Dimensions[0] != qs.Dimensions[0] || ks.Dimensions[headAxis] != qs.Dimensions[headAxis] || ks.Dimensions[3] != qs.Dimensions[3] {
		return nil, fmt.Errorf("sdpa.%s: q %s, k %s, v %s: want q %s", fn, qs, ks, vs, layout)
	}
	if (qs.DType != dtypes.Float32 && qs.DType != dtypes.Float16) || ks.DType != qs.DType {
		return nil, fmt.Errorf("sdpa.%s: q %s, k %s, v %s: the dtype must be Float32 or Float16 for all three", fn, qs, ks, vs)
	}
	s := NewShape(qs.Dimensions[0], qs.Dimensions[headAxis], qs.Dimensions[seqAxis], ks.Dimensions[seqAxis], qs.Dimensions[3])
	if mask != nil {
		if err := tensorMask(fn, o, mask, s); err != nil {
			return nil, err
		}
	}
	r, err := check(fn, s, qs.Size(), ks.Size(), vs.Size(), o)
	if err != nil {
		return nil, err
	}
	out := hostout.Like(q, shapes.Make(qs.DType, qs.Dimensions...))
	if qs.DType == dtypes.Float32 {
		err = runTensors[float32](q, k, v, out, s, &r)
	} else {
		err = runTensors[float16.Float16](q, k, v, out, s, &r)
	}
	if err != nil {
		out.FinalizeAll()
		return nil, fmt.Errorf("sdpa.%s: %w", fn, err)
	}
	return out, nil
}

// runTensors runs the fused kernel on the tensors' flat data.
func runTensors[T element](q, k, v, out *tensors.Tensor, s Shape, r *resolved) error {
	var inner error
	err := tensors.MutableFlatData(out, func(o []T) {
		inner = withFlatData(make([][]T, 0, 3), []*tensors.Tensor{q, k, v}, func(flat [][]T) {
			fused(flat[0], flat[1], flat[2], o, s, r)
		})
	})
	if err != nil {
		return err
	}
	return inner
}

// withFlatData calls fn with the flat data of each of ts (appended to
// flat), holding each distinct tensor's lock once: q, k and v may be the
// same tensor (self-attention on ones in the lab), and a tensor's lock is
// not reentrant.
func withFlatData[T element](flat [][]T, ts []*tensors.Tensor, fn func(flat [][]T)) error {
	i := len(flat)
	if i == len(ts) {
		fn(flat)
		return nil
	}
	for j := 0; j < i; j++ {
		if ts[j] == ts[i] {
			return withFlatData(append(flat, flat[j]), ts, fn)
		}
	}
	var inner error
	err := tensors.ConstFlatData(ts[i], func(x []T) {
		inner = withFlatData(append(flat, x), ts, fn)
	})
	if err != nil {
		return err
	}
	return inner
}

// tensorMask sets o.KeyMask or o.KeyBias from a mask tensor of shape
// [batch, seq_k] or [batch, 1, 1, seq_k].
func tensorMask(fn string, o *Options, mask *tensors.Tensor, s Shape) error {
	ms := mask.Shape()
	dims := ms.Dimensions
	ok := len(dims) == 2 && dims[0] == s.Batch && dims[1] == s.SeqK ||
		len(dims) == 4 && dims[0] == s.Batch && dims[1] == 1 && dims[2] == 1 && dims[3] == s.SeqK
	if !ok {
		return fmt.Errorf("sdpa.%s: mask %s: the kernel takes a key-padding mask [batch, seq_k] = [%d %d] or [batch, 1, 1, seq_k] = [%d 1 1 %d]",
			fn, ms, s.Batch, s.SeqK, s.Batch, s.SeqK)
	}
	var err error
	switch ms.DType {
	case dtypes.Bool:
		o.KeyMask, err = tensors.CopyFlatData[bool](mask)
	case dtypes.Float32:
		o.KeyBias, err = tensors.CopyFlatData[float32](mask)
	case dtypes.Float16:
		var h []float16.Float16
		if h, err = tensors.CopyFlatData[float16.Float16](mask); err == nil {
			o.KeyBias = make([]float32, len(h))
			halfToFloat32(o.KeyBias, h)
		}
	case dtypes.Float64:
		var f []float64
		if f, err = tensors.CopyFlatData[float64](mask); err == nil {
			o.KeyBias = make([]float32, len(f))
			for i, x := range f {
				o.KeyBias[i] = float32(x)
			}
		}
	default:
		return fmt.Errorf("sdpa.%s: mask %s: the dtype must be Bool (true = attend) or Float32, Float16, Float64 (added to the scores)", fn, ms)
	}
	if err != nil {
		return fmt.Errorf("sdpa.%s: reading mask %s: %w", fn, ms, err)
	}
	return nil
}
