package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/float16"

	"github.com/gomase/gomase/kernels/sdpa"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/perf"
)

// sdpaReport is what `mase bench sdpa` measured.
type sdpaReport struct {
	Shape     []int   `json:"shape"` // batch, heads, seq, head_dim
	DType     string  `json:"dtype"`
	SIMD      string  `json:"simd"`
	Reps      int     `json:"reps"`
	NaiveMs   float64 `json:"naive_median_ms"`
	FusedMs   float64 `json:"fused_median_ms"`
	Speedup   float64 `json:"speedup"`
	MaxAbsErr float64 `json:"max_abs_error_vs_float64"`
}

// runBenchSDPA is `mase bench sdpa`: the naive attention (every
// intermediate materialised) and the fused kernel (tiled, online softmax)
// timed alternately on random q, k, v of the lab's shape, each the median
// of --reps calls, after one check of both against the float64 reference.
func runBenchSDPA(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench sdpa", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shape := fs.String("shape", "32,8,128,64", "batch,heads,seq,head_dim (the lab's q = k = v shape)")
	dtype := fs.String("dtype", "float32", "float32 or float16")
	reps := fs.Int("reps", 11, "timed calls of each (the median is reported)")
	be := fs.String("backend", "", "time the GoMLX graphs (sdpa.NaiveGraph vs sdpa.FusedGraph) on this backend instead of the Go kernels: "+backendNames)
	loop := fs.Int("loop", 20, "with --backend: attention calls repeated inside one executable per timing, so the figure leaves out the per-call dispatch")
	masked := fs.Bool("mask", false, "with --backend: add an additive key-padding mask [batch,1,1,seq] (a quarter of the batches keep all keys, the others lose up to 3/8)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	dims, err := parseInts("--shape", *shape)
	if err != nil {
		return err
	}
	if len(dims) != 4 || slices.Min(dims) < 1 {
		return fmt.Errorf("--shape must be four positive sizes batch,heads,seq,head_dim (got %q)", *shape)
	}
	if *dtype != "float32" && *dtype != "float16" {
		return fmt.Errorf("unknown --dtype %q (allowed: float32, float16)", *dtype)
	}
	need := sdpaBytes(dims)
	if need.Overflow != "" {
		return fmt.Errorf("--shape %s: %s overflows int64, more than the %s one computation may take (limits.MaxModelBytes)", *shape, need.Overflow, limits.Bytes(limits.MaxModelBytes))
	}
	if err := limits.Work("--shape "+*shape, need.Total, true); err != nil {
		return err
	}
	if *masked && *be == "" {
		return fmt.Errorf("--mask needs --backend (it times the GoMLX graphs; the Go kernels take a mask through their Options)")
	}
	if err := checkRepsAndLoop(*reps, *loop); err != nil {
		return err
	}
	if *be != "" {
		onBackend, err := benchBackend(be)
		if err != nil {
			return err
		}
		dt := map[string]dtypes.DType{"float32": dtypes.Float32, "float16": dtypes.Float16}[*dtype]
		r, err := perf.SDPAGraph(onBackend, [4]int(dims), dt, *masked, *loop, *reps)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, r)
		}
		fused := "no: the decomposition"
		if r.Fused {
			fused = "yes"
		}
		mask := ""
		if r.Masked {
			mask = " with a padding mask"
		}
		fmt.Fprintf(stdout, "SDPA %v %s%s on %s, GoMLX graphs, %d calls per executable, median of %d: naive %.4f ms, fused %.4f ms (backend's fused op: %s), speedup %.2f×; max |error| vs float64: naive %.2g, fused %.2g; dispatch floor %.4f ms per executable call\n",
			dims, *dtype, mask, r.Backend, r.Reps, r.Timings, r.NaiveMs, r.FusedMs, fused, r.Speedup, r.NaiveMaxAbsErr, r.FusedMaxAbsErr, r.DispatchFloorMs)
		if r.Kernels != "" {
			fmt.Fprintln(stdout, r.Kernels)
		}
		return nil
	}
	s := sdpa.NewShape(dims[0], dims[1], dims[2], dims[2], dims[3])
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func() []float32 {
		x := make([]float32, s.QSize())
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	q, k, v := mk(), mk(), mk()
	naive, fused := sdpa.Naive, sdpa.Fused
	if *dtype == "float16" {
		h := func(x []float32) []float16.Float16 {
			out := make([]float16.Float16, len(x))
			for i, f := range x {
				out[i] = float16.FromFloat32(f)
				x[i] = out[i].Float32() // the reference sees the rounded inputs
			}
			return out
		}
		qh, kh, vh := h(q), h(k), h(v)
		widen := func(f func([]float16.Float16, []float16.Float16, []float16.Float16, sdpa.Shape, *sdpa.Options) ([]float16.Float16, error)) func([]float32, []float32, []float32, sdpa.Shape, *sdpa.Options) ([]float32, error) {
			return func(_, _, _ []float32, s sdpa.Shape, o *sdpa.Options) ([]float32, error) {
				out, err := f(qh, kh, vh, s, o)
				if err != nil {
					return nil, err
				}
				r := make([]float32, len(out))
				for i, x := range out {
					r[i] = x.Float32()
				}
				return r, nil
			}
		}
		naive, fused = widen(sdpa.NaiveFloat16), widen(sdpa.FusedFloat16)
	}
	to64 := func(x []float32) []float64 {
		out := make([]float64, len(x))
		for i, f := range x {
			out[i] = float64(f)
		}
		return out
	}
	ref, err := sdpa.Reference(to64(q), to64(k), to64(v), s, nil)
	if err != nil {
		return err
	}
	r := sdpaReport{Shape: dims, DType: *dtype, SIMD: sdpa.SIMDLevel(), Reps: *reps}
	var nt, ft []time.Duration
	for i := 0; i < *reps; i++ {
		start := time.Now()
		yn, err := naive(q, k, v, s, nil)
		if err != nil {
			return err
		}
		nt = append(nt, time.Since(start))
		start = time.Now()
		yf, err := fused(q, k, v, s, nil)
		if err != nil {
			return err
		}
		ft = append(ft, time.Since(start))
		if i == 0 {
			for j := range ref {
				r.MaxAbsErr = math.Max(r.MaxAbsErr, math.Max(math.Abs(float64(yn[j])-ref[j]), math.Abs(float64(yf[j])-ref[j])))
			}
		}
	}
	median := func(ds []time.Duration) float64 { return float64(perf.Summarise(ds).Median) / 1e6 }
	r.NaiveMs, r.FusedMs = median(nt), median(ft)
	r.Speedup = r.NaiveMs / r.FusedMs
	if *asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "SDPA %v %s (%s kernels), median of %d: naive %.2f ms, fused %.2f ms, speedup %.2f×; max |error| vs float64 %.2g\n",
		dims, *dtype, r.SIMD, r.Reps, r.NaiveMs, r.FusedMs, r.Speedup, r.MaxAbsErr)
	return nil
}

// sdpaBytes estimates what `bench sdpa` allocates for shape batch, heads,
// seq, head_dim: q, k, v and both outputs in float32 and in float64 (the
// reference), and the naive path's score and probability matrices
// [batch, heads, seq, seq] in float64; its Overflow names the sizes whose
// product overflowed.
func sdpaBytes(dims []int) limits.Estimate {
	b, h := limits.Dim{Name: "batch", N: int64(dims[0])}, limits.Dim{Name: "heads", N: int64(dims[1])}
	s, d := limits.Dim{Name: "seq", N: int64(dims[2])}, limits.Dim{Name: "head_dim", N: int64(dims[3])}
	var e limits.Estimate
	e.Add(5*(4+8), b, h, s, d)
	e.Add(2*8, b, h, s, s)
	return e
}
