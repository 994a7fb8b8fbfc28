package train

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// adamW is the optimizer of a Trainer: global gradient-norm clipping (as
// torch.nn.utils.clip_grad_norm_) followed by AdamW (torch.optim.AdamW,
// and GoMLX's optimizer.Adam with decoupled weight decay, which the step
// graph used before), applied in place to the parameters' tensors.
//
// It runs in Go rather than in the step graph: fused into one loop per
// parameter (and split across the CPU cores), the update reads each
// gradient, moment and parameter once, where the graph's dozen elementwise
// ops each made a pass over memory — ~60 ms per bert-tiny step on the
// 30522×128 word-embedding table alone.
type adamW struct {
	step  int // optimizer steps taken (GoMLX's Adam step counter)
	state map[*model.Variable]*paramState
}

// paramState is the optimizer state of one parameter: its first and second
// moment estimates and, for an embedding table updated from lookups, the
// dense gradient being scattered and the rows it touches.
type paramState struct {
	m, v    []float32
	acc     []float32 // dense gradient, zero outside touched rows
	touched []bool    // per row: has a gradient this step
	rows    []int     // the touched rows, in order of first touch
	// live is per row: ever touched. A row never touched has zero
	// moments, and without weight decay its update is exactly zero.
	live []bool
}

// paramGrad is one parameter's gradient from the step graph: dense, or the
// gradients of the rows its embedding lookups gathered with their ids.
type paramGrad struct {
	v         *model.Variable
	dense     *tensors.Tensor
	rows, ids []*tensors.Tensor
}

// chunk is the number of elements one goroutine updates at a time.
const chunk = 1 << 15

// update clips the gradients to cfg's MaxGradNorm, takes one AdamW step at
// learning rate lr on the parameters and returns the gradient norm before
// clipping.
func (o *adamW) update(cfg Config, lr float64, grads []paramGrad) (_ float64, err error) {
	if o.state == nil {
		o.state = map[*model.Variable]*paramState{}
	}
	// The gradients' data is read after ConstFlatData returns: the tensors
	// are neither changed nor freed until the step is over.
	dense := make([][]float32, len(grads)) // the dense gradients (nil for lookups)
	states := make([]*paramState, len(grads))
	defer func() {
		if err != nil { // leave no scattered gradient behind for the next step
			for _, st := range states {
				if st != nil && st.acc != nil {
					st.clearTouched()
				}
			}
		}
	}()
	sq := 0.0
	for i, pg := range grads {
		n := pg.v.Shape().Size()
		st := o.state[pg.v]
		if st == nil {
			st = &paramState{m: make([]float32, n), v: make([]float32, n)}
			o.state[pg.v] = st
		}
		states[i] = st
		if pg.dense != nil {
			if err := tensors.ConstFlatData(pg.dense, func(flat []float32) { dense[i] = flat }); err != nil {
				return 0, fmt.Errorf("gradient of %s: %w", pg.v.Name(), err)
			}
			if len(dense[i]) != n {
				return 0, fmt.Errorf("gradient of %s: %d values for %d parameters", pg.v.Name(), len(dense[i]), n)
			}
			sq += sumSquares(dense[i])
			continue
		}
		if err := st.scatter(pg); err != nil {
			return 0, err
		}
		dim := pg.v.Shape().Dimensions[1]
		for _, r := range st.rows {
			sq += sumSquares(st.acc[r*dim : (r+1)*dim])
		}
	}
	norm := math.Sqrt(sq)
	coef := 1.0
	if cfg.MaxGradNorm > 0 {
		coef = min(1, cfg.MaxGradNorm/(norm+1e-6))
	}
	o.step++
	c := adamConsts{
		coef: float32(coef), b1: float32(cfg.Beta1), b2: float32(cfg.Beta2),
		nb1: float32(1 - cfg.Beta1), nb2: float32(1 - cfg.Beta2),
		debias1: float32(1 / (1 - math.Pow(cfg.Beta1, float64(o.step)))),
		debias2: float32(1 / (1 - math.Pow(cfg.Beta2, float64(o.step)))),
		eps:     float32(cfg.Epsilon), lr: float32(lr), decay: float32(cfg.WeightDecay),
	}
	for i, pg := range grads {
		st := states[i]
		value, err := pg.v.Value()
		if err != nil {
			return 0, err
		}
		var sizeErr error
		err = tensors.MutableFlatData(value, func(p []float32) {
			if len(p) != len(st.m) {
				sizeErr = fmt.Errorf("parameter %s has %d values, its optimizer state %d", pg.v.Name(), len(p), len(st.m))
				return
			}
			if dense[i] != nil {
				parallelChunks(len(p), chunk, func(lo, hi int) { c.apply(p[lo:hi], dense[i][lo:hi], st.m[lo:hi], st.v[lo:hi]) })
				return
			}
			// By rows: untouched rows have a zero gradient (their moments
			// still decay and their values still move), but rows never
			// touched have zero moments and, without weight decay, an
			// update of exactly zero (m = v = 0, p -= lr·0/(0+ε)): they
			// are skipped. Touched rows are cleared for the next step.
			dim := pg.v.Shape().Dimensions[1]
			parallelChunks(len(st.touched), max(1, chunk/dim), func(lo, hi int) {
				for r := lo; r < hi; r++ {
					a, b := r*dim, (r+1)*dim
					switch {
					case st.touched[r]:
						c.apply(p[a:b], st.acc[a:b], st.m[a:b], st.v[a:b])
						clear(st.acc[a:b])
						st.touched[r] = false
					case st.live[r] || c.decay != 0:
						c.apply(p[a:b], nil, st.m[a:b], st.v[a:b])
					}
				}
			})
			st.rows = st.rows[:0]
		})
		if err == nil {
			err = sizeErr
		}
		if err != nil {
			return 0, fmt.Errorf("updating %s: %w", pg.v.Name(), err)
		}
	}
	return norm, nil
}

// clearTouched zeroes the scattered gradient and forgets the touched rows.
func (st *paramState) clearTouched() {
	dim := len(st.acc) / len(st.touched)
	for _, r := range st.rows {
		clear(st.acc[r*dim : (r+1)*dim])
		st.touched[r] = false
	}
	st.rows = st.rows[:0]
}

// scatter adds the gradients of looked-up rows into the dense gradient of
// their table, in lookup order (as GoMLX's gradient of Gather, ScatterSum).
func (st *paramState) scatter(pg paramGrad) error {
	num, dim := pg.v.Shape().Dimensions[0], pg.v.Shape().Dimensions[1]
	if st.acc == nil {
		st.acc, st.touched, st.live = make([]float32, num*dim), make([]bool, num), make([]bool, num)
	}
	for k := range pg.rows {
		var ids []int32
		if err := tensors.ConstFlatData(pg.ids[k], func(flat []int32) { ids = flat }); err != nil {
			return fmt.Errorf("embedding ids of %s: %w", pg.v.Name(), err)
		}
		var rows []float32
		if err := tensors.ConstFlatData(pg.rows[k], func(flat []float32) { rows = flat }); err != nil {
			return fmt.Errorf("embedding gradient of %s: %w", pg.v.Name(), err)
		}
		if len(rows) != len(ids)*dim {
			return fmt.Errorf("embedding gradient of %s: %d values for %d ids of %d", pg.v.Name(), len(rows), len(ids), dim)
		}
		for j, id := range ids {
			r := int(id)
			if r < 0 || r >= num {
				continue // an invalid id: nothing to scatter
			}
			if !st.touched[r] {
				st.touched[r], st.live[r] = true, true
				st.rows = append(st.rows, r)
			}
			dst, src := st.acc[r*dim:(r+1)*dim], rows[j*dim:(j+1)*dim]
			for e := range dst {
				dst[e] += src[e]
			}
		}
	}
	return nil
}

// adamConsts are one step's scalars.
type adamConsts struct {
	coef, b1, b2, nb1, nb2, debias1, debias2, eps, lr float32
	decay                                             float32 // weight decay λ
}

// apply updates one slice of a parameter p with gradients g (nil: zeros)
// and moments m, v. As GoMLX's Adam, in float32: m ← β₁m + (1-β₁)g,
// v ← β₂v + (1-β₂)g², p ← p - (lr·m/(1-β₁ᵗ)/(√(v/(1-β₂ᵗ)) + ε) + lr·λ·p).
// The SIMD version (applyVec, when available) does the same operations in
// the same order, so the results are identical.
func (c adamConsts) apply(p, g, m, v []float32) {
	m, v = m[:len(p)], v[:len(p)]
	if g != nil {
		g = g[:len(p)]
	}
	done := c.applyVec(p, g, m, v)
	if g != nil {
		g = g[done:]
	}
	c.applyScalar(p[done:], g, m[done:], v[done:])
}

// applyScalar is apply one element at a time.
func (c adamConsts) applyScalar(p, g, m, v []float32) {
	for j := range p {
		var gj float32
		if g != nil {
			gj = g[j] * c.coef
		}
		mj := c.b1*m[j] + c.nb1*gj
		vj := c.b2*v[j] + c.nb2*(gj*gj)
		m[j], v[j] = mj, vj
		den := float32(math.Sqrt(float64(vj*c.debias2))) + c.eps
		step := c.lr * (mj * c.debias1) / den
		if c.decay != 0 {
			step += c.lr * (p[j] * c.decay)
		}
		p[j] -= step
	}
}

// sumSquares is Σ x², accumulated in float64 per chunk and the chunks
// added in order (the result does not depend on scheduling).
func sumSquares(f []float32) float64 {
	partial := make([]float64, (len(f)+chunk-1)/chunk)
	parallelChunks(len(f), chunk, func(lo, hi int) {
		s := 0.0
		for _, x := range f[lo:hi] {
			s += float64(x) * float64(x)
		}
		partial[lo/chunk] = s
	})
	total := 0.0
	for _, s := range partial {
		total += s
	}
	return total
}

// parallelChunks calls fn on [0, n) in chunks of size (the last one
// shorter), on up to GOMAXPROCS goroutines when there is more than one.
func parallelChunks(n, size int, fn func(lo, hi int)) {
	chunks := (n + size - 1) / size
	workers := min(chunks, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for lo := 0; lo < n; lo += size {
			fn(lo, min(lo+size, n))
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := 0; c < chunks; c++ {
		next <- c * size
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := range next {
				fn(lo, min(lo+size, n))
			}
		}()
	}
	wg.Wait()
}
