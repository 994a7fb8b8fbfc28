package sdpa

import (
	"math"

	"github.com/gomlx/compute/dtypes/float16"
)

// Naive computes softmax(Q·Kᵀ·scale [+ mask])·V in float32 the way the
// lab's naive module does in PyTorch eager mode: one operation at a time,
// each producing a new [batch, heads, seq_q, seq_k] tensor —
//
//	scores = Q·Kᵀ; scaled = scores·scale; [masked = scaled + mask;]
//	[causal fill with -Inf;] probs = softmax(·); out = probs·V
//
// Every operation is parallel over batch×heads and uses the same SIMD
// micro-kernels as Fused, so the two differ only in how often they go
// through memory. Arguments are those of Fused.
func Naive(q, k, v []float32, s Shape, o *Options) ([]float32, error) {
	r, err := check("Naive", s, len(q), len(k), len(v), o)
	if err != nil {
		return nil, err
	}
	if r.seqMajor {
		return viaHeadMajor(q, k, v, s, o, Naive)
	}
	return naive(q, k, v, s, &r), nil
}

// NaiveFloat16 is Naive on float16 inputs and output: the inputs are
// converted to float32 tensors first (like .float()), Naive runs in
// float32, and the output is rounded to float16.
func NaiveFloat16(q, k, v []float16.Float16, s Shape, o *Options) ([]float16.Float16, error) {
	r, err := check("NaiveFloat16", s, len(q), len(k), len(v), o)
	if err != nil {
		return nil, err
	}
	if r.seqMajor {
		return viaHeadMajor(q, k, v, s, o, NaiveFloat16)
	}
	q32, k32, v32 := make([]float32, len(q)), make([]float32, len(k)), make([]float32, len(v))
	qn, kn := s.SeqQ*s.HeadDim, s.SeqK*s.HeadDim
	parallel(s.Batch*s.Heads, func(_, bh int) {
		halfToFloat32(q32[bh*qn:(bh+1)*qn], q[bh*qn:(bh+1)*qn])
		halfToFloat32(k32[bh*kn:(bh+1)*kn], k[bh*kn:(bh+1)*kn])
		halfToFloat32(v32[bh*kn:(bh+1)*kn], v[bh*kn:(bh+1)*kn])
	})
	out32 := naive(q32, k32, v32, s, &r)
	out := make([]float16.Float16, len(out32))
	parallel(s.Batch*s.Heads, func(_, bh int) {
		float32ToHalf(out[bh*qn:(bh+1)*qn], out32[bh*qn:(bh+1)*qn])
	})
	return out, nil
}

// naive runs the decomposition on validated inputs.
func naive(q, k, v []float32, s Shape, r *resolved) []float32 {
	B, H, Sq, Sk, D := s.Batch, s.Heads, s.SeqQ, s.SeqK, s.HeadDim
	BH, ldk, dp := B*H, roundUp(Sk, 16), roundUp(D, 16)
	qn, kn, sn := Sq*D, Sk*D, Sq*Sk
	negInf := float32(math.Inf(-1))
	kts, vss := make([][]float32, workers(BH)), make([][]float32, workers(BH))

	// scores = Q·Kᵀ (K transposed into scratch, as a BLAS would pack it).
	scores := make([]float32, s.ScoreSize())
	parallel(BH, func(w, bh int) {
		if kts[w] == nil {
			kts[w] = make([]float32, D*ldk)
		}
		kt := kts[w]
		transpose(kt, ldk, k[bh*kn:(bh+1)*kn], D, Sk, D)
		qh, sh := q[bh*qn:(bh+1)*qn], scores[bh*sn:(bh+1)*sn]
		var qr, dst rows4
		for i0 := 0; i0 < Sq; i0 += 4 {
			for rr := range 4 {
				i := i0 + min(rr, Sq-1-i0)
				qr[rr], dst[rr] = qh[i*D:(i+1)*D], sh[i*Sk:(i+1)*Sk]
			}
			scores4(&dst, &qr, kt, ldk, D, Sk)
		}
	})

	// scaled = scores·scale
	scaled := make([]float32, len(scores))
	scale := float32(r.scale)
	parallel(BH, func(_, bh int) {
		scaleAdd(scaled[bh*sn:(bh+1)*sn], scores[bh*sn:(bh+1)*sn], scale, nil)
	})
	cur := scaled

	// masked = scaled + mask (key padding: additive, -Inf where KeyMask is false)
	if r.keyBias != nil || r.keyMask != nil {
		masked := make([]float32, len(cur))
		rows := make([][]float32, B)
		for b := range rows {
			rows[b] = make([]float32, Sk)
			r.keyBiasRow(rows[b], b, Sk)
		}
		parallel(BH, func(_, bh int) {
			for i := 0; i < Sq; i++ {
				o := bh*sn + i*Sk
				scaleAdd(masked[o:o+Sk], cur[o:o+Sk], 1, rows[bh/H])
			}
		})
		cur = masked
	}

	// causal: masked_fill(j > i, -Inf)
	if r.causal {
		filled := make([]float32, len(cur))
		parallel(BH, func(_, bh int) {
			for i := 0; i < Sq; i++ {
				o := bh*sn + i*Sk
				n := min(i+1, Sk)
				copy(filled[o:o+n], cur[o:o+n])
				for j := n; j < Sk; j++ {
					filled[o+j] = negInf
				}
			}
		})
		cur = filled
	}

	// probs = softmax(cur) over keys; a row with nothing to attend stays 0.
	probs := make([]float32, len(cur))
	parallel(BH, func(_, bh int) {
		for i := 0; i < Sq; i++ {
			o := bh*sn + i*Sk
			src, dst := cur[o:o+Sk], probs[o:o+Sk]
			m := rowMax(src)
			if m == negInf {
				continue
			}
			sum := expSum(dst, src, m)
			scaleAdd(dst, dst, 1/sum, nil)
		}
	})

	// out = probs·V (V padded into scratch).
	out := make([]float32, s.QSize())
	accs := make([]rows4, len(vss))
	parallel(BH, func(w, bh int) {
		if vss[w] == nil {
			vss[w] = make([]float32, Sk*dp)
		}
		vs := vss[w]
		for j := 0; j < Sk; j++ {
			copy(vs[j*dp:j*dp+D], v[bh*kn+j*D:bh*kn+(j+1)*D])
		}
		acc := &accs[w]
		if acc[0] == nil {
			for rr := range acc {
				acc[rr] = make([]float32, dp)
			}
		}
		ones := [4]float32{1, 1, 1, 1}
		var p rows4
		for i0 := 0; i0 < Sq; i0 += 4 {
			for rr := range 4 {
				i := i0 + min(rr, Sq-1-i0)
				p[rr] = probs[bh*sn+i*Sk : bh*sn+(i+1)*Sk]
				clear(acc[rr])
			}
			pv4(acc, &ones, &p, vs, dp, Sk, dp)
			for rr := 0; rr < min(4, Sq-i0); rr++ {
				o := bh*qn + (i0+rr)*D
				copy(out[o:o+D], acc[rr][:D])
			}
		}
	})
	return out
}
