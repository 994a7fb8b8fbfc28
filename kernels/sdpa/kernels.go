package sdpa

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute/dtypes/float16"
)

// The micro-kernels below are shared by Naive and Fused. Each is a
// function variable holding the portable Go version; simd_amd64.go swaps
// in AVX2+FMA or AVX-512 versions at init when the CPU has them (and the
// build has GOEXPERIMENT=simd).

// rows4 is a group of four rows handled together by the micro-kernels: the
// query rows of scores4, the output rows of pv4. Missing rows (fewer than
// four left) repeat the last one.
type rows4 = [4][]float32

var (
	// scores4 sets dst[r][j] = Σ_{d<D} q[r][d]·kt[d·ldk+j] for r < 4 and
	// j < n: four rows of Q·Kᵀ, with K transposed to kt ([D][ldk]). kt
	// must be readable up to column roundUp(n, 16) in every row (zero
	// padding), dst[r] must have at least n elements, q[r] at least D.
	scores4 = scores4Go

	// pv4 sets o[r][c] = o[r][c]·corr[r] + Σ_{j<n} p[r][j]·v[j·ldv+c] for
	// r < 4 and c < dp: four rows of P·V accumulated into o (corr[r] = 0
	// clears o[r] whatever it held). dp is a multiple of 16, o[r] has dp
	// elements, v has n rows of ldv ≥ dp.
	pv4 = pv4Go

	// rowMax returns the largest element of x (-Inf when x is empty).
	rowMax = rowMaxGo

	// expSum sets dst[j] = exp(src[j] - m) and returns Σ dst[j]; m is the
	// maximum of src (so every argument is ≤ 0) and finite. dst and src
	// may be the same slice.
	expSum = expSumGo

	// scaleAdd sets dst[j] = src[j]·a + b[j] for j < len(dst) (b may be
	// nil: src[j]·a). dst and src may be the same slice.
	scaleAdd = scaleAddGo

	// scaleAddMax is scaleAdd (with b non-nil) returning the largest
	// element written (-Inf for an empty dst).
	scaleAddMax = scaleAddMaxGo

	// halfToFloat32 converts src to float32 (exactly) into dst.
	halfToFloat32 = halfToFloat32Go

	// float32ToHalf rounds src to float16 (to nearest, ties to even;
	// subnormals kept) into dst.
	float32ToHalf = float32ToHalfGo

	// transpose writes the n×D matrix x (rows ldx apart) transposed into
	// kt ([D][ldk], ldk ≥ n); columns n and up of kt are left as they are.
	transpose = transposeGo

	// simdLevel names the instruction set of the kernels in use.
	simdLevel = "go"
)

// SIMDLevel reports which version of the kernels this process runs:
// "avx512", "avx2+fma", or "go" (portable Go: no GOEXPERIMENT=simd, not
// amd64, or a CPU without AVX2 and FMA).
func SIMDLevel() string { return simdLevel }

// kernelSets lists the kernel versions this build and CPU can run besides
// the AVX-512 ones, each as a function switching to it and returning a
// function switching back (the tests run every one).
var kernelSets = map[string]func() (restore func()){"go": useGoKernels}

// kernelSet is a complete set of kernels.
type kernelSet struct {
	scores4       func(dst, q *rows4, kt []float32, ldk, D, n int)
	pv4           func(o *rows4, corr *[4]float32, p *rows4, v []float32, ldv, n, dp int)
	rowMax        func(x []float32) float32
	expSum        func(dst, src []float32, m float32) float32
	scaleAdd      func(dst, src []float32, a float32, b []float32)
	scaleAddMax   func(dst, src []float32, a float32, b []float32) float32
	halfToFloat32 func(dst []float32, src []float16.Float16)
	float32ToHalf func(dst []float16.Float16, src []float32)
	transpose     func(kt []float32, ldk int, x []float32, ldx, n, D int)
	level         string
}

// goKernels is the portable set.
var goKernels = kernelSet{scores4Go, pv4Go, rowMaxGo, expSumGo, scaleAddGo, scaleAddMaxGo, halfToFloat32Go, float32ToHalfGo, transposeGo, "go"}

// use installs ks as the kernels in use and returns a function restoring
// the previous ones.
func (ks kernelSet) use() (restore func()) {
	prev := kernelSet{scores4, pv4, rowMax, expSum, scaleAdd, scaleAddMax, halfToFloat32, float32ToHalf, transpose, simdLevel}
	scores4, pv4, rowMax, expSum, scaleAdd, scaleAddMax = ks.scores4, ks.pv4, ks.rowMax, ks.expSum, ks.scaleAdd, ks.scaleAddMax
	halfToFloat32, float32ToHalf, transpose, simdLevel = ks.halfToFloat32, ks.float32ToHalf, ks.transpose, ks.level
	return func() { prev.use() }
}

// useGoKernels switches to the portable kernels (for tests); it returns a
// function restoring the previous ones.
func useGoKernels() (restore func()) { return goKernels.use() }

func scores4Go(dst, q *rows4, kt []float32, ldk, D, n int) {
	for r := 0; r < 4; r++ {
		row, qr := dst[r][:n], q[r][:D]
		for j := range row {
			row[j] = 0
		}
		for d, qd := range qr {
			kd := kt[d*ldk : d*ldk+n]
			for j, kv := range kd {
				row[j] += qd * kv
			}
		}
	}
}

func pv4Go(o *rows4, corr *[4]float32, p *rows4, v []float32, ldv, n, dp int) {
	for r := 0; r < 4; r++ {
		or, pr := o[r][:dp], p[r][:n]
		switch c := corr[r]; c {
		case 0:
			clear(or)
		case 1:
		default:
			for i := range or {
				or[i] *= c
			}
		}
		for j, pj := range pr {
			vj := v[j*ldv : j*ldv+dp]
			for i, x := range vj {
				or[i] += pj * x
			}
		}
	}
}

func rowMaxGo(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

func expSumGo(dst, src []float32, m float32) float32 {
	var sum float32
	dst = dst[:len(src)]
	for j, x := range src {
		e := float32(math.Exp(float64(x - m)))
		dst[j] = e
		sum += e
	}
	return sum
}

func scaleAddGo(dst, src []float32, a float32, b []float32) {
	src = src[:len(dst)]
	if b == nil {
		for j, x := range src {
			dst[j] = x * a
		}
		return
	}
	b = b[:len(dst)]
	for j, x := range src {
		dst[j] = x*a + b[j]
	}
}

func scaleAddMaxGo(dst, src []float32, a float32, b []float32) float32 {
	scaleAddGo(dst, src, a, b)
	return rowMaxGo(dst)
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// parallel runs body(worker, i) for i in [0, n) on up to GOMAXPROCS
// goroutines; worker < workers(n) identifies the goroutine (for scratch
// space).
func parallel(n int, body func(worker, i int)) {
	w := workers(n)
	if w <= 1 {
		for i := 0; i < n; i++ {
			body(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				body(g, i)
			}
		}(g)
	}
	wg.Wait()
}

// workers is the number of goroutines parallel uses for n items.
func workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }
