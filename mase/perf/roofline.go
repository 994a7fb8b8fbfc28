package perf

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// Peaks are a backend's measured ceilings, each inside one executable (a
// loop, so no dispatch is counted): the float32 matmul rate at a square
// size and the rate of an element-wise pass (read and write) over a large
// buffer. Ridge is where the two meet: the arithmetic intensity (FLOPs a
// byte) above which a kernel can be compute-bound.
type Peaks struct {
	MatmulSize   int     `json:"matmul_size"`
	MatmulGFlops float64 `json:"matmul_gflops_per_s"`
	CopyBytes    int64   `json:"copy_bytes"`
	CopyGBs      float64 `json:"copy_gb_per_s"`
	Ridge        float64 `json:"ridge_flops_per_byte"`
}

// PeaksBytes is what MeasurePeaks(be, n, values, reps) holds at once, in
// bytes: the two n×n float32 matrices and their product, the values and
// their sum, each a host tensor and a backend copy.
func PeaksBytes(n, values int) int64 {
	return 2 * 4 * (3*int64(n)*int64(n) + 2*int64(values))
}

// MeasurePeaks measures be's Peaks: an n×n float32 matmul and an
// element-wise pass over values float32s, each repeated reps times in a
// loop after one warm-up call.
func MeasurePeaks(be compute.Backend, n, values, reps int) (*Peaks, error) {
	if n < 16 || n > 16384 || values < 1024 || values > 1<<30 || reps < 1 || reps > 10000 {
		return nil, fmt.Errorf("perf: peaks at matmul size %d, %d values, %d repetitions (allowed: 16–16384, 1024–2^30, 1–10000)", n, values, reps)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(k int, scale float32) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = (rng.Float32()*2 - 1) * scale
		}
		return x
	}
	a := tensors.FromFlatDataAndDimensions(fill(n*n, 1), n, n)
	b := tensors.FromFlatDataAndDimensions(fill(n*n, float32(1/math.Sqrt(float64(n)))), n, n)
	defer a.FinalizeAll()
	defer b.FinalizeAll()
	mm, err := timeLoop(be, reps, func(st []*graph.Node) []*graph.Node {
		return []*graph.Node{graph.MatMul(st[0], st[1]), st[1]}
	}, a, b)
	if err != nil {
		return nil, fmt.Errorf("perf: the matmul peak: %w", err)
	}
	x := tensors.FromFlatDataAndDimensions(fill(values, 1), values)
	defer x.FinalizeAll()
	cp, err := timeLoop(be, reps, func(st []*graph.Node) []*graph.Node {
		return []*graph.Node{graph.AddScalar(st[0], 1)}
	}, x)
	if err != nil {
		return nil, fmt.Errorf("perf: the copy peak: %w", err)
	}
	p := &Peaks{MatmulSize: n, CopyBytes: 8 * int64(values)}
	p.MatmulGFlops = 2 * float64(n) * float64(n) * float64(n) / mm / 1e9
	p.CopyGBs = float64(p.CopyBytes) / cp / 1e9
	p.Ridge = p.MatmulGFlops / p.CopyGBs
	return p, nil
}

// timeLoop runs step reps times in a loop on state and returns the
// seconds of one repetition, after a warm-up call.
func timeLoop(be compute.Backend, reps int, step func(st []*graph.Node) []*graph.Node, state ...*tensors.Tensor) (float64, error) {
	l, err := NewInLoop(be, reps, func(_ Counter, st []*graph.Node) ([]*graph.Node, error) { return step(st), nil })
	if err != nil {
		return 0, err
	}
	defer l.Close()
	if _, _, err := l.Time(state...); err != nil {
		return 0, err
	}
	d, _, err := l.Time(state...)
	if err != nil {
		return 0, err
	}
	return d.Seconds(), nil
}

// RooflinePoint places one stage of a profile on the roofline: its
// arithmetic intensity (all its FLOPs, element-wise included, over its
// bytes), the rate it reached, the rate the peaks allow at that
// intensity, and which ceiling that is.
type RooflinePoint struct {
	Name       string  `json:"name"`
	Op         string  `json:"op"`
	Intensity  float64 `json:"flops_per_byte"`
	GFlopsPerS float64 `json:"gflops_per_s"`
	Attainable float64 `json:"attainable_gflops_per_s"`
	Bound      string  `json:"bound"` // "memory" left of the ridge, else "compute"
}

// Roofline places every stage that computes and moves bytes; stages
// without a cost (views, constants) are left out.
func (p *RunProfile) Roofline(pk *Peaks) []RooflinePoint {
	var pts []RooflinePoint
	for _, s := range p.Stages {
		f := float64(s.Flops + s.ElementwiseFlops)
		if f == 0 || s.Bytes == 0 {
			continue
		}
		pt := RooflinePoint{Name: s.Name, Op: s.Op, Intensity: f / float64(s.Bytes), GFlopsPerS: s.GFlopsPerS}
		pt.Attainable = math.Min(pk.MatmulGFlops, pt.Intensity*pk.CopyGBs)
		pt.Bound = "compute"
		if pt.Intensity < pk.Ridge {
			pt.Bound = "memory"
		}
		pts = append(pts, pt)
	}
	return pts
}
