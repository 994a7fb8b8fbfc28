package mxint8

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
)

// Throughput convention: a dequantisation of n values moves
// n + ceil(n/gs) packed input bytes and 2n bfloat16 output bytes; its
// GB/s is (input + output bytes) / time (b.SetBytes, and the "GB/s"
// metric = bytes per nanosecond). BenchmarkMemcpy copies a []byte of that
// same total size with copy(), so "GB/s" there is the copied size per
// second; the two are directly comparable ("how long, next to copying the
// same bytes").

// benchSizes: 64 Ki values (about 194 KiB moved, cache-resident) and 4 Mi
// values (a Linear(4096, 1024) weight: about 12.1 MiB).
var benchSizes = []int{1 << 13, 1 << 16, 1 << 22}

func benchPacked(b *testing.B, n, gs int) *Packed {
	b.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), uint64(gs)))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.02)
	}
	p, err := Pack(x, gs)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// movedBytes is the input + output bytes of one dequantisation of p.
func movedBytes(p *Packed) int64 { return int64(p.Bytes() + 2*p.Len()) }

func reportGBs(b *testing.B, bytes int64) {
	b.SetBytes(bytes)
	b.ReportMetric(float64(bytes)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GB/s")
}

// BenchmarkDequantize is the fast Go kernel (AVX2 with GOEXPERIMENT=simd)
// at group size 32 for both sizes, and at every group size for 4 Mi
// values.
func BenchmarkDequantize(b *testing.B) {
	type cfg struct{ n, gs int }
	var cfgs []cfg
	for _, n := range benchSizes {
		cfgs = append(cfgs, cfg{n, 32})
	}
	for _, gs := range GroupSizes {
		if gs != 32 {
			cfgs = append(cfgs, cfg{1 << 22, gs})
		}
	}
	for _, c := range cfgs {
		b.Run(fmt.Sprintf("n=%d/gs=%d", c.n, c.gs), func(b *testing.B) {
			p := benchPacked(b, c.n, c.gs)
			dst := make([]bfloat16.BFloat16, p.Len())
			b.ResetTimer()
			for b.Loop() {
				_ = Dequantize(dst, p)
			}
			reportGBs(b, movedBytes(p))
		})
	}
}

// BenchmarkDequantizeScalar is the kernel's scalar loop alone (what runs
// without SIMD), group size 32.
func BenchmarkDequantizeScalar(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d/gs=32", n), func(b *testing.B) {
			p := benchPacked(b, n, 32)
			dst := make([]bfloat16.BFloat16, p.Len())
			b.ResetTimer()
			for b.Loop() {
				dequantizeScalar(dst, p.mantissas, p.exponents, p.groupSize)
			}
			reportGBs(b, movedBytes(p))
		})
	}
}

// BenchmarkDequantizeReference is the lab's bit-trick loop (allocating its
// output, as the reference does), group size 32.
func BenchmarkDequantizeReference(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d/gs=32", n), func(b *testing.B) {
			p := benchPacked(b, n, 32)
			b.ResetTimer()
			for b.Loop() {
				_ = DequantizeReference(p)
			}
			reportGBs(b, movedBytes(p))
		})
	}
}

// BenchmarkDequantizeGraph runs DequantizeGraph compiled on the default
// backend (the Go backend unless GOMLX_BACKEND says otherwise), group size
// 32: one executable call per iteration, inputs already on the device,
// output freed each time.
func BenchmarkDequantizeGraph(b *testing.B) {
	be, err := backend.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d/gs=32", n), func(b *testing.B) {
			p := benchPacked(b, n, 32)
			exec, err := graph.NewExec(be, func(m, e *graph.Node) *graph.Node {
				out, err := DequantizeGraph(m, e, 32)
				if err != nil {
					panic(err)
				}
				return out
			})
			if err != nil {
				b.Fatal(err)
			}
			m, e := tensors.FromValue(p.Mantissas()), tensors.FromValue(p.Exponents())
			res, err := exec.Call(m, e) // compile outside the timing
			if err != nil {
				b.Fatal(err)
			}
			res[0].FinalizeAll()
			b.ResetTimer()
			for b.Loop() {
				res, err := exec.Call(m, e)
				if err != nil {
					b.Fatal(err)
				}
				res[0].FinalizeAll()
			}
			reportGBs(b, movedBytes(p))
		})
	}
}

// BenchmarkMemcpy copies a []byte of the same total size as the
// dequantisation benchmarks at group size 32 (n + n/32 + 2n bytes).
func BenchmarkMemcpy(b *testing.B) {
	for _, n := range benchSizes {
		size := StorageBytes(n, 32) + 2*n
		b.Run(fmt.Sprintf("n=%d/bytes=%d", n, size), func(b *testing.B) {
			src, dst := make([]byte, size), make([]byte, size)
			for i := range src {
				src[i] = byte(i)
			}
			b.ResetTimer()
			for b.Loop() {
				copy(dst, src)
			}
			reportGBs(b, int64(size))
		})
	}
}

// BenchmarkDequantizeVsMemcpy alternates the fast kernel and a copy of
// the same total bytes (group size 32), a few repetitions of each in turn,
// timing each side separately: on a shared, loaded machine both see the
// same conditions. Metrics: each side's GB/s and the kernel's bandwidth
// as a percentage of the copy's ("%of-memcpy").
func BenchmarkDequantizeVsMemcpy(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("n=%d/gs=32", n), func(b *testing.B) {
			p := benchPacked(b, n, 32)
			dst := make([]bfloat16.BFloat16, p.Len())
			size := movedBytes(p)
			src, cp := make([]byte, size), make([]byte, size)
			reps := max(1, (1<<20)/int(size)) // about 1 MB per timed run
			var tDeq, tCopy time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				for range reps {
					_ = Dequantize(dst, p)
				}
				t1 := time.Now()
				for range reps {
					copy(cp, src)
				}
				t2 := time.Now()
				tDeq += t1.Sub(t0)
				tCopy += t2.Sub(t1)
			}
			total := float64(size) * float64(reps) * float64(b.N)
			b.ReportMetric(total/float64(tDeq.Nanoseconds()), "dequant-GB/s")
			b.ReportMetric(total/float64(tCopy.Nanoseconds()), "memcpy-GB/s")
			b.ReportMetric(100*float64(tCopy)/float64(tDeq), "%of-memcpy")
		})
	}
}

// BenchmarkPack is the quantiser (float32 → packed), group size 32; bytes
// are the float32 input plus the packed output.
func BenchmarkPack(b *testing.B) {
	n := 1 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 0.02)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Pack(x, 32); err != nil {
			b.Fatal(err)
		}
	}
	reportGBs(b, int64(4*n+StorageBytes(n, 32)))
}
