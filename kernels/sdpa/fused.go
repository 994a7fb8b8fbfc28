package sdpa

import (
	"fmt"
	"math"
	"runtime"

	"github.com/gomlx/compute/dtypes/float16"
)

// TileKeys is the number of keys per tile of the fused kernel (a multiple
// of 16): the scores exist only for four query rows and one tile of keys
// at a time, never for the whole [SeqQ, SeqK] matrix, and longer key
// sequences take several tiles joined by the online softmax. 128 keys (a
// 2 KiB block of scores) ran about 20% faster than 64 at the lab's shape,
// whose 128 keys then fit one tile — as in PyTorch's CPU flash attention,
// whose key tile is 512.
const TileKeys = 128

// element is the element type of the inputs and outputs: float32, or
// float16 computed in float32.
type element interface {
	float32 | float16.Float16
}

// Fused computes softmax(Q·Kᵀ·scale [+ mask])·V in float32 with a
// FlashAttention-style kernel: for each group of four query rows it walks
// the keys in tiles of TileKeys, keeping a running maximum and sum per row
// (online softmax) and rescaling the partial output when the maximum
// grows, so the [SeqQ, SeqK] score matrix is never materialised. Heads
// (or blocks of 64 query rows, when there are fewer heads than twice
// GOMAXPROCS) run in parallel on GOMAXPROCS goroutines; the inner loops
// use SIMD where the CPU has it (see SIMDLevel). q is [batch, heads, seq_q, head_dim], k and v
// are [batch, heads, seq_k, head_dim]; see Options for scale and masks.
func Fused(q, k, v []float32, s Shape, o *Options) ([]float32, error) {
	r, err := check("Fused", s, len(q), len(k), len(v), o)
	if err != nil {
		return nil, err
	}
	out := make([]float32, s.QSize())
	fused(q, k, v, out, s, &r)
	return out, nil
}

// FusedInto is Fused writing into out (s.QSize() elements, overwritten),
// for callers that reuse one output buffer across calls: a fresh output is
// memory the kernel must fault in or the allocator must zero, which at the
// lab's shape (33.5 MB) is about a quarter of the kernel's time.
func FusedInto(out, q, k, v []float32, s Shape, o *Options) error {
	r, err := check("FusedInto", s, len(q), len(k), len(v), o)
	if err != nil {
		return err
	}
	if len(out) != s.QSize() {
		return fmt.Errorf("sdpa.FusedInto: out has %d elements, shape %s needs %d", len(out), s, s.QSize())
	}
	fused(q, k, v, out, s, &r)
	return nil
}

// FusedFloat16 is Fused on float16 inputs and output: each head is
// converted to float32 as it is loaded into the kernel's buffers, all
// arithmetic (scores, softmax, accumulation) is float32, and the output is
// rounded to float16 once at the end.
func FusedFloat16(q, k, v []float16.Float16, s Shape, o *Options) ([]float16.Float16, error) {
	r, err := check("FusedFloat16", s, len(q), len(k), len(v), o)
	if err != nil {
		return nil, err
	}
	out := make([]float16.Float16, s.QSize())
	fused(q, k, v, out, s, &r)
	return out, nil
}

// workspace is one goroutine's scratch space for the fused kernel.
type workspace struct {
	kt    []float32 // K of the current head transposed: [D][ldk], zero-padded columns
	vs    []float32 // V of the current head: [ldk][dp], zero-padded rows and columns
	bias  []float32 // additive key term of batch biasB: [ldk], -Inf for padding keys
	biasB int
	head  int   // batch·heads index of the head in kt and vs (-1: none)
	s     rows4 // score / probability tile: 4 rows of TileKeys
	o     rows4 // output accumulators: 4 rows of dp
	qs    rows4 // the current query rows times the scale: 4 rows of HeadDim

	// float16 only: the current head converted to float32.
	q, k, v, out []float32
}

func newWorkspace(s Shape, half bool) *workspace {
	ldk, dp := roundUp(s.SeqK, 16), roundUp(s.HeadDim, 16)
	ws := &workspace{
		kt:    make([]float32, s.HeadDim*ldk),
		vs:    make([]float32, ldk*dp),
		bias:  make([]float32, ldk),
		biasB: -1,
		head:  -1,
	}
	for r := range 4 {
		ws.s[r] = make([]float32, TileKeys)
		ws.o[r] = make([]float32, dp)
		ws.qs[r] = make([]float32, s.HeadDim)
	}
	if half {
		ws.q = make([]float32, s.SeqQ*s.HeadDim)
		ws.k = make([]float32, s.SeqK*s.HeadDim)
		ws.v = make([]float32, s.SeqK*s.HeadDim)
		ws.out = make([]float32, s.SeqQ*s.HeadDim)
	}
	return ws
}

// fused runs the fused kernel on validated inputs, writing out. The work
// items are heads, or chunks of a head's query rows when there are too
// few heads to keep every goroutine busy.
func fused[T element](q, k, v, out []T, s Shape, r *resolved) {
	D := s.HeadDim
	heads := s.Batch * s.Heads
	rowsPerItem := s.SeqQ
	if heads < 2*runtime.GOMAXPROCS(0) {
		rowsPerItem = min(s.SeqQ, 64)
	}
	chunks := (s.SeqQ + rowsPerItem - 1) / rowsPerItem
	_, half := any(out).([]float16.Float16)
	wss := make([]*workspace, workers(heads*chunks))
	parallel(heads*chunks, func(w, item int) {
		ws := wss[w]
		if ws == nil {
			ws = newWorkspace(s, half)
			wss[w] = ws
		}
		bh := item / chunks
		b, h := bh/s.Heads, bh%s.Heads
		i0 := item % chunks * rowsPerItem
		n := min(i0+rowsPerItem, s.SeqQ) - i0
		if ws.head != bh {
			off, ld := headRows(s, r, b, h, s.SeqK)
			kh, ldk := rowsFloat32(ws.k, k, off, ld, s.SeqK, D)
			vh, ldv := rowsFloat32(ws.v, v, off, ld, s.SeqK, D)
			ws.load(kh, ldk, vh, ldv, b, s, r)
			ws.head = bh
		}
		off, ld := headRows(s, r, b, h, s.SeqQ)
		off += i0 * ld
		qh, ldq := rowsFloat32(ws.q, q, off, ld, n, D)
		if o32, ok := any(out).([]float32); ok {
			fusedRows(ws, qh, ldq, o32[off:], ld, n, i0, s, r)
			return
		}
		fusedRows(ws, qh, ldq, ws.out, D, n, i0, s, r)
		storeRows(out, off, ld, ws.out, n, D)
	})
}

// headRows locates head h of batch b in a q, k, v or output tensor of seq
// rows per head: row i starts at off + i·ld.
func headRows(s Shape, r *resolved, b, h, seq int) (off, ld int) {
	if r.seqMajor {
		return (b*seq*s.Heads + h) * s.HeadDim, s.Heads * s.HeadDim
	}
	return (b*s.Heads + h) * seq * s.HeadDim, s.HeadDim
}

// rowsFloat32 returns n rows of D elements of x, row i at off + i·ld, as
// float32 rows and their stride: x itself from off, or (float16) the rows
// converted into buf, D apart.
func rowsFloat32[T element](buf []float32, x []T, off, ld, n, D int) ([]float32, int) {
	switch x := any(x).(type) {
	case []float32:
		return x[off : off+(n-1)*ld+D], ld
	case []float16.Float16:
		if ld == D {
			halfToFloat32(buf[:n*D], x[off:off+n*D])
			return buf, D
		}
		for i := range n {
			halfToFloat32(buf[i*D:(i+1)*D], x[off+i*ld:off+i*ld+D])
		}
		return buf, D
	}
	panic("sdpa: unsupported element type")
}

// storeRows rounds n float32 rows of src (D apart) into dst's rows at off
// + i·ld.
func storeRows[T element](dst []T, off, ld int, src []float32, n, D int) {
	if ld == D {
		fromFloat32(dst[off:off+n*D], src[:n*D])
		return
	}
	for i := range n {
		fromFloat32(dst[off+i*ld:off+i*ld+D], src[i*D:(i+1)*D])
	}
}

// load brings one head's k and v (batch b; rows ldk and ldv apart) into
// the workspace: K transposed, V padded (the padding stays zero), and the
// key bias row.
func (ws *workspace) load(k []float32, ldkIn int, v []float32, ldv int, b int, s Shape, r *resolved) {
	Sk, D := s.SeqK, s.HeadDim
	ldk, dp := roundUp(Sk, 16), roundUp(D, 16)
	transpose(ws.kt, ldk, k, ldkIn, Sk, D)
	for j := 0; j < Sk; j++ {
		copy(ws.vs[j*dp:j*dp+D], v[j*ldv:j*ldv+D])
	}
	if ws.biasB != b {
		r.keyBiasRow(ws.bias, b, Sk)
		ws.biasB = b
	}
}

// fusedRows computes n query rows (row i at q[i·ldq:], rows first..
// first+n-1 of the head loaded in ws) into out (row i at out[i·ldo:]).
func fusedRows(ws *workspace, q []float32, ldq int, out []float32, ldo, n, first int, s Shape, r *resolved) {
	Sk, D := s.SeqK, s.HeadDim
	ldk, dp := roundUp(Sk, 16), roundUp(D, 16)
	negInf := float32(math.Inf(-1))
	kt, vs := ws.kt, ws.vs
	scale := float32(r.scale)
	// Without a mask, and with no padding keys (whose bias is -Inf), the
	// bias row is all zeros: the scores need no pass before their maximum.
	noBias := r.keyBias == nil && r.keyMask == nil && Sk%16 == 0

	var st rows4
	for i0 := 0; i0 < n; i0 += 4 {
		rows := min(4, n-i0)
		var m, l [4]float32
		for rr := range 4 {
			i := i0 + min(rr, rows-1)
			scaleAdd(ws.qs[rr], q[i*ldq:i*ldq+D], scale, nil) // the scale applied to q, not to the scores
			m[rr] = negInf
		}
		kEnd := Sk
		if r.causal {
			kEnd = min(Sk, first+i0+rows)
		}
		kEndPad := roundUp(kEnd, 16)
		for j0 := 0; j0 < kEnd; j0 += TileKeys {
			nj := min(TileKeys, kEndPad-j0)
			for rr := range 4 {
				st[rr] = ws.s[rr][:nj]
			}
			scores4(&st, &ws.qs, kt[j0:], ldk, D, nj)
			var corr [4]float32
			for rr := range 4 {
				row := st[rr]
				var mt float32
				switch i := first + i0 + min(rr, rows-1); {
				case r.causal && i+1 < j0+nj:
					// Keys past the row's own position are masked out.
					if !noBias {
						scaleAdd(row, row, 1, ws.bias[j0:j0+nj])
					}
					for j := max(i+1-j0, 0); j < nj; j++ {
						row[j] = negInf
					}
					mt = rowMax(row)
				case noBias:
					mt = rowMax(row)
				default:
					mt = scaleAddMax(row, row, 1, ws.bias[j0:j0+nj])
				}
				mNew := max(m[rr], mt)
				switch {
				case mNew == negInf: // nothing to attend yet: o = 0
					clear(row)
					corr[rr] = 0
					continue
				case m[rr] == negInf:
					corr[rr] = 0
				case m[rr] == mNew:
					corr[rr] = 1
				default:
					corr[rr] = float32(math.Exp(float64(m[rr] - mNew)))
				}
				l[rr] = l[rr]*corr[rr] + expSum(row, row, mNew)
				m[rr] = mNew
			}
			pv4(&ws.o, &corr, &st, vs[j0*dp:], dp, nj, dp)
		}
		for rr := 0; rr < rows; rr++ {
			dst := out[(i0+rr)*ldo : (i0+rr)*ldo+D]
			if l[rr] == 0 {
				clear(dst)
				continue
			}
			scaleAdd(dst, ws.o[rr][:D], 1/l[rr], nil)
		}
	}
}

// transposeGo is transpose (kernels.go) in portable Go.
func transposeGo(kt []float32, ldk int, x []float32, ldx, n, D int) {
	j := 0
	for ; j+4 <= n; j += 4 {
		x0, x1, x2, x3 := x[j*ldx:j*ldx+D], x[(j+1)*ldx:(j+1)*ldx+D], x[(j+2)*ldx:(j+2)*ldx+D], x[(j+3)*ldx:(j+3)*ldx+D]
		for d := range x0 {
			t := kt[d*ldk+j : d*ldk+j+4]
			t[0], t[1], t[2], t[3] = x0[d], x1[d], x2[d], x3[d]
		}
	}
	for ; j < n; j++ {
		for d, v := range x[j*ldx : j*ldx+D] {
			kt[d*ldk+j] = v
		}
	}
}

// toFloat32 returns x as float32: x itself, or x converted into buf.
func toFloat32[T element](buf []float32, x []T) []float32 {
	switch x := any(x).(type) {
	case []float32:
		return x
	case []float16.Float16:
		buf = buf[:len(x)]
		halfToFloat32(buf, x)
		return buf
	}
	panic("sdpa: unsupported element type")
}

// fromFloat32 stores x into dst, rounding to dst's element type.
func fromFloat32[T element](dst []T, x []float32) {
	switch dst := any(dst).(type) {
	case []float32:
		copy(dst, x)
	case []float16.Float16:
		float32ToHalf(dst, x)
	}
}

// halfToFloat32Go is halfToFloat32 (kernels.go) in portable Go.
func halfToFloat32Go(dst []float32, src []float16.Float16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = halfToF32(h)
	}
}

// float32ToHalfGo is float32ToHalf (kernels.go) in portable Go.
func float32ToHalfGo(dst []float16.Float16, src []float32) {
	src = src[:len(dst)]
	for i, x := range src {
		dst[i] = halfFromF32(x)
	}
}

// halfToF32 converts a float16 to float32 (exactly).
func halfToF32(h float16.Float16) float32 {
	sign := uint32(h&0x8000) << 16
	em := uint32(h & 0x7fff)
	switch {
	case em >= 0x7c00: // Inf, NaN
		return math.Float32frombits(sign | 0x7f800000 | (em&0x3ff)<<13)
	case em >= 0x0400: // normal: rebias the exponent by 127 - 15
		return math.Float32frombits(sign | (em<<13 + 112<<23))
	}
	f := float32(em) * (1.0 / (1 << 24)) // subnormal (or zero): em·2⁻²⁴
	if sign != 0 {
		f = -f
	}
	return f
}

// halfFromF32 rounds a float32 to the nearest float16 (ties to even),
// including subnormals. (float16.FromFloat32 of compute v0.1.2 flushes
// results below 2⁻¹⁴, float16's subnormal range, to zero.)
func halfFromF32(x float32) float16.Float16 {
	b := math.Float32bits(x)
	sign := float16.Float16(b>>16) & 0x8000
	b &= 0x7fffffff
	switch {
	case b > 0x7f800000: // NaN: quiet NaN
		return sign | 0x7e00
	case b >= 0x477ff000: // ≥ 65520 (halfway above the largest float16, 65504) or Inf
		return sign | 0x7c00
	case b >= 0x38800000: // ≥ 2⁻¹⁴: normal float16
		m := b - 112<<23
		m += 0x0fff + (m>>13)&1
		return sign | float16.Float16(m>>13)
	case b > 0x33000000: // (2⁻²⁵, 2⁻¹⁴): subnormal float16, in units of 2⁻²⁴
		e := b >> 23
		mant := b&0x7fffff | 0x800000
		shift := 126 - e
		r, rem, half := mant>>shift, mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | float16.Float16(r)
	}
	return sign // rounds to ±0
}
