package perf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/sdpa"
	"github.com/gomase/gomase/mase/backend"
)

// SDPAKernelRow is one dtype of SDPAKernels: the naive and the fused Go
// kernels' median call and largest error against a float64 reference.
type SDPAKernelRow struct {
	DType            string        `json:"dtype"`
	Naive, Fused     time.Duration `json:"-"`
	Speedup          float64       `json:"speedup"`
	NaiveErr         float64       `json:"naive_max_abs_error"`
	FusedErr         float64       `json:"fused_max_abs_error"`
	NaiveMs, FusedMs float64       `json:"-"`
}

// SDPAKernelReport is the lab's naive against fused attention on the Go
// kernels (kernels/sdpa), with the lab's all-ones check first.
type SDPAKernelReport struct {
	Dims  [4]int `json:"shape"` // batch, heads, seq, head_dim
	Reps  int    `json:"reps"`
	Shape sdpa.Shape
	// OnesNaive and OnesFused are y1[0,0,0,0] and y2[0,0,0,0] on the lab's
	// all-ones float16 inputs; NotOne counts outputs other than 1.0.
	OnesNaive, OnesFused float32
	NotOne, Outputs      int
	Rows                 []SDPAKernelRow `json:"rows"`
	// MaxRef is the largest |output| of the float16 reference.
	MaxRef float64
}

// SDPAKernels runs the lab's check (q = k = v = ones in float16: every
// output 1.0), then times sdpa.Naive and sdpa.Fused in float32 and float16
// on random q, k, v of shape dims, all four taking turns, reps calls each,
// and measures each one's largest error against sdpa.Reference (the
// float16 kernels against a reference that sees the rounded inputs).
func SDPAKernels(dims [4]int, reps int) (*SDPAKernelReport, error) {
	s := sdpa.NewShape(dims[0], dims[1], dims[2], dims[2], dims[3])
	r := &SDPAKernelReport{Dims: dims, Reps: reps, Shape: s}
	ones := make([]float16.Float16, s.QSize())
	for i := range ones {
		ones[i] = float16.FromFloat32(1)
	}
	y1, err := sdpa.NaiveFloat16(ones, ones, ones, s, nil)
	if err != nil {
		return nil, err
	}
	y2, err := sdpa.FusedFloat16(ones, ones, ones, s, nil)
	if err != nil {
		return nil, err
	}
	r.OnesNaive, r.OnesFused, r.Outputs = y1[0].Float32(), y2[0].Float32(), len(y1)
	for i := range y1 {
		if y1[i].Float32() != 1 || y2[i].Float32() != 1 {
			r.NotOne++
		}
	}

	rng := rand.New(rand.NewPCG(3, 4))
	random := func() []float32 {
		x := make([]float32, s.QSize())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	wide := func(x []float32) []float64 {
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out
	}
	half := func(x []float32) ([]float16.Float16, []float64) {
		h, w := make([]float16.Float16, len(x)), make([]float64, len(x))
		for i, f := range x {
			h[i] = float16.FromFloat32(f)
			w[i] = float64(h[i].Float32())
		}
		return h, w
	}
	wide16 := func(y []float16.Float16) []float64 {
		out := make([]float64, len(y))
		for i, h := range y {
			out[i] = float64(h.Float32())
		}
		return out
	}
	q, k, v := random(), random(), random()
	qh, q16 := half(q)
	kh, k16 := half(k)
	vh, v16 := half(v)
	ref32, err := sdpa.Reference(wide(q), wide(k), wide(v), s, nil)
	if err != nil {
		return nil, err
	}
	ref16, err := sdpa.Reference(q16, k16, v16, s, nil)
	if err != nil {
		return nil, err
	}
	for _, x := range ref16 {
		r.MaxRef = math.Max(r.MaxRef, math.Abs(x))
	}
	type impl struct {
		ref []float64
		run func() ([]float64, error)
	}
	impls := []impl{
		{ref32, func() ([]float64, error) { y, err := sdpa.Naive(q, k, v, s, nil); return wide(y), err }},
		{ref32, func() ([]float64, error) { y, err := sdpa.Fused(q, k, v, s, nil); return wide(y), err }},
		{ref16, func() ([]float64, error) { y, err := sdpa.NaiveFloat16(qh, kh, vh, s, nil); return wide16(y), err }},
		{ref16, func() ([]float64, error) { y, err := sdpa.FusedFloat16(qh, kh, vh, s, nil); return wide16(y), err }},
	}
	maxErr := make([]float64, len(impls))
	times := make([][]time.Duration, len(impls))
	for rep := range reps {
		for i, im := range impls {
			start := time.Now()
			y, err := im.run()
			times[i] = append(times[i], time.Since(start))
			if err != nil {
				return nil, err
			}
			if rep == 0 {
				for j := range im.ref {
					maxErr[i] = math.Max(maxErr[i], math.Abs(y[j]-im.ref[j]))
				}
			}
		}
	}
	for i, dt := range []string{"float32", "float16"} {
		n, f := Median(times[2*i]), Median(times[2*i+1])
		r.Rows = append(r.Rows, SDPAKernelRow{DType: dt, Naive: n, Fused: f, Speedup: float64(n) / float64(f),
			NaiveErr: maxErr[2*i], FusedErr: maxErr[2*i+1], NaiveMs: ms(n), FusedMs: ms(f)})
	}
	return r, nil
}

// Markdown shows the lab's check, the timing table and what it says: the
// speedups, the memory the naive path writes, the float16 conversions and
// the errors.
func (r *SDPAKernelReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The lab's check, q = k = v = ones %v in float16: naive y1[0,0,0,0] = %v, fused y2[0,0,0,0] = %v; "+
		"outputs other than 1.0: %d of %d.\n\n", r.Dims, r.OnesNaive, r.OnesFused, r.NotOne, r.Outputs)
	fmt.Fprintf(&b, "Random q, k, v %v, %s kernels, median of %d calls each (alternated):\n\n", r.Dims, sdpa.SIMDLevel(), r.Reps)
	b.WriteString("| dtype | naive | fused | speedup | max abs error, naive | max abs error, fused |\n|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f× | %.2g | %.2g |\n", row.DType, Dur(row.Naive), Dur(row.Fused), row.Speedup, row.NaiveErr, row.FusedErr)
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		if row.Speedup >= 1 {
			fmt.Fprintf(&b, "- **%s**: the fused kernel is %.2f× faster than the naive one on this CPU.\n", row.DType, row.Speedup)
		} else {
			fmt.Fprintf(&b, "- **%s**: the fused kernel is %.2f× slower than the naive one in this run (other programs competing for the CPU?).\n", row.DType, 1/row.Speedup)
		}
	}
	s := r.Shape
	scoreBytes := int64(s.ScoreSize()) * 4
	mb := func(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }
	fmt.Fprintf(&b, "- **What it saves**: the naive path writes and reads back three [%d, %d, %d, %d] float32 tensors (scores, scaled scores, "+
		"probabilities) of %s each, %s per call, %.1f× the size of q, k and v together (%s). The fused kernel holds scores for 4 query "+
		"rows × %d keys (%d KiB) per worker at a time, in cache.\n", s.Batch, s.Heads, s.SeqQ, s.SeqK, mb(scoreBytes), mb(3*scoreBytes),
		float64(3*scoreBytes)/float64(3*s.QSize()*4), mb(int64(3*s.QSize()*4)), sdpa.TileKeys, 4*sdpa.TileKeys*4/1024)
	b.WriteString("- **float16**: the naive path converts q, k and v to float32 tensors before it starts and its output back at the end " +
		"(`.float()`), two more passes over memory; the fused kernel converts each head as it loads it.\n")
	fmt.Fprintf(&b, "- **Accuracy**: in float32 both stay within %.1g of the float64 reference (the online softmax rescales, it does not "+
		"approximate). In float16 the error is the final rounding to float16: at most half a unit in the last place, %.2g for outputs up to %.2f.\n",
		math.Max(r.Rows[0].NaiveErr, r.Rows[0].FusedErr), r.MaxRef*math.Ldexp(1, -11), r.MaxRef)
	return b.String()
}

// SDPAGraphs runs SDPAGraph on be for each dtype and mask the backend
// computes natively: float32 everywhere; float16, and a padding mask, on a
// backend other than the Go one (whose float16 matmuls have no SIMD kernels
// and accumulate in float16, and whose two graphs are the same
// decomposition anyway).
func SDPAGraphs(be compute.Backend, dims [4]int, loop, reps int) ([]*SDPAGraphReport, error) {
	dts, masks := []dtypes.DType{dtypes.Float32}, []bool{false}
	if !backend.IsGo(be) {
		dts, masks = append(dts, dtypes.Float16), append(masks, true)
	}
	var out []*SDPAGraphReport
	for _, dt := range dts {
		for _, masked := range masks {
			r, err := SDPAGraph(be, dims, dt, masked, loop, reps)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// SDPAGraphsMarkdown is the table of SDPAGraphs' reports on be, with what
// the backend's fused attention op does there.
func SDPAGraphsMarkdown(be compute.Backend, dims [4]int, rs []*SDPAGraphReport) string {
	var b strings.Builder
	if len(rs) == 0 {
		return ""
	}
	fmt.Fprintf(&b, "Backend **%s**, q = k = v %v, %d attentions per executable call, median of %d calls:\n\n", be.Name(), dims, rs[0].Reps, rs[0].Timings)
	b.WriteString("| dtype | padding mask | naive graph | fused graph | backend's fused op | speedup | max abs error, naive | max abs error, fused | dispatch floor |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		used, mask := "no (decomposition)", "no"
		if r.Fused {
			used = "yes"
		}
		if r.Masked {
			mask = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %.3f ms | %.3f ms | %s | %.2f× | %.2g | %.2g | %.3f ms |\n", r.DType, mask, r.NaiveMs, r.FusedMs, used, r.Speedup, r.NaiveMaxAbsErr, r.FusedMaxAbsErr, r.DispatchFloorMs)
	}
	if backend.IsGo(be) {
		b.WriteString("\nfloat16 is left out on this backend: the Go backend has no SIMD float16 matmul and accumulates float16 products in " +
			"float16 (seconds per call at this size, errors of tenths); a GPU backend computes it natively.\n")
	}
	if !be.Capabilities().Operations[compute.OpTypeFusedScaledDotProductAttention] {
		b.WriteString("\nThis backend has no fused attention op, so both graphs are the same decomposition and the speedup is 1× up " +
			"to noise: the fused kernel above runs on it only between compiled segments (compiled mode's `sdpa_kernel` rewrite, Part 1).\n")
	} else {
		b.WriteString("\nThis backend has a fused attention op: where it takes the inputs (cuDNN: float16 or bfloat16, a mask as a bias " +
			"when queries and keys have the same length; gomase's flash-attention kernel: float32, and the rest), the fused graph is one kernel instead of the three or four " +
			"of the naive one; elsewhere it falls back to the decomposition.\n")
	}
	if k := rs[len(rs)-1].Kernels; k != "" {
		b.WriteString("\n" + k + ".\n")
	}
	return b.String()
}

// Label is the report's chart label: its dtype, "masked" when it was.
func (r *SDPAGraphReport) Label() string {
	if r.Masked {
		return r.DType + " masked"
	}
	return r.DType
}
