// Package sdpa implements scaled-dot-product attention,
//
//	softmax(Q·Kᵀ·scale [+ mask])·V,
//
// three ways (Lab 4, spec §7.2):
//
//   - Reference: a float64 oracle, used by the tests;
//   - Naive: the lab's "naive" float32 path, one pass per operation
//     (matmul, scale, mask, softmax, matmul), each materialising its
//     [batch, heads, seq_q, seq_k] result as PyTorch eager does;
//   - Fused: a FlashAttention-style float32 kernel, tiled over keys with an
//     online softmax (running max and sum), which never materialises the
//     score matrix; SIMD (AVX2+FMA or AVX-512, GOEXPERIMENT=simd on amd64)
//     where the CPU has it, parallel over batch×heads.
//
// Naive and Fused share the same SIMD micro-kernels, so the speedup of Fused
// over Naive measures the fusion (fewer passes over memory), not a better
// matmul. Both have float16 variants that accumulate in float32.
//
// For GoMLX graphs, NaiveGraph builds the decomposition from GoMLX ops and
// FusedGraph uses the backend's fused attention op where the backend has
// one; FusedTensors runs the Go kernel on tensors, as a host-side op (a
// "graph break") for the Go backend, which takes no custom kernels.
//
// Layout: q is [batch, heads, seq_q, head_dim], k and v are
// [batch, heads, seq_k, head_dim], all row-major; the output has q's shape.
package sdpa

import (
	"fmt"
	"math"
)

// Shape gives the dimensions of an attention call: q is
// [Batch, Heads, SeqQ, HeadDim], k and v are [Batch, Heads, SeqK, HeadDim].
type Shape struct {
	Batch, Heads, SeqQ, SeqK, HeadDim int
}

// NewShape returns the Shape of q [batch, heads, seqQ, headDim] with k and
// v of length seqK.
func NewShape(batch, heads, seqQ, seqK, headDim int) Shape {
	return Shape{Batch: batch, Heads: heads, SeqQ: seqQ, SeqK: seqK, HeadDim: headDim}
}

// String formats the shape as "q [B H Sq D], k/v [B H Sk D]".
func (s Shape) String() string {
	return fmt.Sprintf("q [%d %d %d %d], k/v [%d %d %d %d]",
		s.Batch, s.Heads, s.SeqQ, s.HeadDim, s.Batch, s.Heads, s.SeqK, s.HeadDim)
}

// QSize is the number of elements of q (and of the output).
func (s Shape) QSize() int { return s.Batch * s.Heads * s.SeqQ * s.HeadDim }

// KVSize is the number of elements of k (and of v).
func (s Shape) KVSize() int { return s.Batch * s.Heads * s.SeqK * s.HeadDim }

// ScoreSize is the number of elements of the score matrix
// [Batch, Heads, SeqQ, SeqK] that Naive materialises and Fused does not.
func (s Shape) ScoreSize() int { return s.Batch * s.Heads * s.SeqQ * s.SeqK }

// Options are the optional parts of an attention call. A nil *Options is
// the same as the zero value: scale 1/√HeadDim, no mask, not causal.
//
// A query left with no key to attend (every key masked out by KeyMask,
// Causal or a -Inf KeyBias) gets an all-zero output row in every
// implementation, as GoMLX's MaskedSoftmax gives (PyTorch gives NaN).
type Options struct {
	// Scale multiplies Q·Kᵀ; 0 selects the default 1/√HeadDim.
	Scale float64

	// Causal restricts query i to keys j ≤ i (PyTorch's is_causal: the
	// top-left-aligned lower triangle, also when SeqQ ≠ SeqK).
	Causal bool

	// KeyBias is an optional additive key-padding mask of shape
	// [Batch, SeqK], added to the scaled scores of every head and query
	// (BERT's extended mask (1 - attention_mask)·min, squeezed from
	// [Batch, 1, 1, SeqK]).
	KeyBias []float32

	// KeyMask is an optional boolean key-padding mask of shape
	// [Batch, SeqK]: true means attend, false means ignore the key.
	KeyMask []bool

	// SeqMajor says q, k, v and the output are laid out [batch, seq,
	// heads, head_dim] — a Linear's output split into heads, before the
	// transpose that attention usually takes — instead of [batch, heads,
	// seq, head_dim]. Fused reads and writes that layout in place; Naive
	// and Reference transpose to and from it.
	SeqMajor bool
}

// resolved holds validated options in the form the kernels use.
type resolved struct {
	scale    float64
	causal   bool
	seqMajor bool
	keyBias  []float32
	keyMask  []bool
}

// check validates the shape, the lengths of q, k, v and the options, and
// resolves the default scale.
func check(fn string, s Shape, nq, nk, nv int, o *Options) (resolved, error) {
	var r resolved
	if s.Batch < 1 || s.Heads < 1 || s.SeqQ < 1 || s.SeqK < 1 || s.HeadDim < 1 {
		return r, fmt.Errorf("sdpa.%s: shape %s: every dimension must be ≥ 1", fn, s)
	}
	if nq != s.QSize() {
		return r, fmt.Errorf("sdpa.%s: q has %d elements, shape %s needs %d·%d·%d·%d = %d",
			fn, nq, s, s.Batch, s.Heads, s.SeqQ, s.HeadDim, s.QSize())
	}
	for _, kv := range []struct {
		name string
		n    int
	}{{"k", nk}, {"v", nv}} {
		if kv.n != s.KVSize() {
			return r, fmt.Errorf("sdpa.%s: %s has %d elements, shape %s needs %d·%d·%d·%d = %d",
				fn, kv.name, kv.n, s, s.Batch, s.Heads, s.SeqK, s.HeadDim, s.KVSize())
		}
	}
	r.scale = 1 / math.Sqrt(float64(s.HeadDim))
	if o == nil {
		return r, nil
	}
	if o.Scale != 0 {
		if math.IsNaN(o.Scale) || math.IsInf(o.Scale, 0) {
			return r, fmt.Errorf("sdpa.%s: scale %v must be finite (0 selects 1/√head_dim)", fn, o.Scale)
		}
		r.scale = o.Scale
	}
	r.causal, r.seqMajor = o.Causal, o.SeqMajor
	if o.KeyBias != nil {
		if len(o.KeyBias) != s.Batch*s.SeqK {
			return r, fmt.Errorf("sdpa.%s: KeyBias has %d elements; a key-padding mask is [batch, seq_k] = [%d %d] (%d elements)",
				fn, len(o.KeyBias), s.Batch, s.SeqK, s.Batch*s.SeqK)
		}
		r.keyBias = o.KeyBias
	}
	if o.KeyMask != nil {
		if len(o.KeyMask) != s.Batch*s.SeqK {
			return r, fmt.Errorf("sdpa.%s: KeyMask has %d elements; a key-padding mask is [batch, seq_k] = [%d %d] (%d elements)",
				fn, len(o.KeyMask), s.Batch, s.SeqK, s.Batch*s.SeqK)
		}
		r.keyMask = o.KeyMask
	}
	return r, nil
}

// keyBiasRow writes into dst (len ≥ SeqK) the additive term of batch b's
// keys: KeyBias, with -Inf where KeyMask is false; entries of dst past
// SeqK are set to -Inf (padding keys).
func (r *resolved) keyBiasRow(dst []float32, b, seqK int) {
	negInf := float32(math.Inf(-1))
	for j := range dst {
		switch {
		case j >= seqK:
			dst[j] = negInf
		case r.keyMask != nil && !r.keyMask[b*seqK+j]:
			dst[j] = negInf
		case r.keyBias != nil:
			dst[j] = r.keyBias[b*seqK+j]
		default:
			dst[j] = 0
		}
	}
}

// Reference computes softmax(Q·Kᵀ·scale [+ mask])·V in float64, directly
// from the definition (the test oracle). See Options for the mask and
// scale; a query with no attendable key gets zeros.
func Reference(q, k, v []float64, s Shape, o *Options) ([]float64, error) {
	r, err := check("Reference", s, len(q), len(k), len(v), o)
	if err != nil {
		return nil, err
	}
	if r.seqMajor {
		return viaHeadMajor(q, k, v, s, o, Reference)
	}
	D, Sq, Sk := s.HeadDim, s.SeqQ, s.SeqK
	out := make([]float64, s.QSize())
	scores := make([]float64, Sk)
	allowed := make([]bool, Sk)
	for b := 0; b < s.Batch; b++ {
		for h := 0; h < s.Heads; h++ {
			bh := b*s.Heads + h
			qh, kh, vh := q[bh*Sq*D:(bh+1)*Sq*D], k[bh*Sk*D:(bh+1)*Sk*D], v[bh*Sk*D:(bh+1)*Sk*D]
			oh := out[bh*Sq*D : (bh+1)*Sq*D]
			for i := 0; i < Sq; i++ {
				maxScore := math.Inf(-1)
				for j := 0; j < Sk; j++ {
					allowed[j] = !(r.causal && j > i) && (r.keyMask == nil || r.keyMask[b*Sk+j])
					if !allowed[j] {
						continue
					}
					var dot float64
					for d := 0; d < D; d++ {
						dot += qh[i*D+d] * kh[j*D+d]
					}
					sc := dot * r.scale
					if r.keyBias != nil {
						sc += float64(r.keyBias[b*Sk+j])
					}
					scores[j] = sc
					if math.IsInf(sc, -1) {
						allowed[j] = false
						continue
					}
					maxScore = math.Max(maxScore, sc)
				}
				if math.IsInf(maxScore, -1) {
					continue // no key to attend: zeros
				}
				var sum float64
				for j := 0; j < Sk; j++ {
					if allowed[j] {
						scores[j] = math.Exp(scores[j] - maxScore)
						sum += scores[j]
					}
				}
				for j := 0; j < Sk; j++ {
					if !allowed[j] {
						continue
					}
					p := scores[j] / sum
					for d := 0; d < D; d++ {
						oh[i*D+d] += p * vh[j*D+d]
					}
				}
			}
		}
	}
	return out, nil
}

// viaHeadMajor runs fn, an implementation for the head-major layout, on
// validated seq-major q, k and v: transposed copies in, the output
// transposed back.
func viaHeadMajor[T any](q, k, v []T, s Shape, o *Options, fn func(q, k, v []T, s Shape, o *Options) ([]T, error)) ([]T, error) {
	ho := *o
	ho.SeqMajor = false
	B, H, D := s.Batch, s.Heads, s.HeadDim
	out, err := fn(swapAxes12(q, B, s.SeqQ, H, D), swapAxes12(k, B, s.SeqK, H, D), swapAxes12(v, B, s.SeqK, H, D), s, &ho)
	if err != nil {
		return nil, err
	}
	return swapAxes12(out, B, H, s.SeqQ, D), nil
}

// swapAxes12 returns x ([n0][n1][n2][d]) with its middle axes swapped:
// [n0][n2][n1][d].
func swapAxes12[T any](x []T, n0, n1, n2, d int) []T {
	out := make([]T, len(x))
	for a := range n0 {
		for i := range n1 {
			for j := range n2 {
				src := ((a*n1+i)*n2 + j) * d
				dst := ((a*n2+j)*n1 + i) * d
				copy(out[dst:dst+d], x[src:src+d])
			}
		}
	}
	return out
}
