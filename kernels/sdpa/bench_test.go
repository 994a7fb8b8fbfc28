package sdpa

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// labShape is the lab's [batch, heads, seq, head_dim] = [32, 8, 128, 64].
var labShape = NewShape(32, 8, 128, 128, 64)

// benchSlices times fn on random inputs of the lab's shape, reporting
// ms/op.
func benchSlices[T any](b *testing.B, conv func([]float32) []T, fn func(q, k, v []T, s Shape, o *Options) ([]T, error)) {
	q, k, v := randomInputs(labShape, rand.New(rand.NewPCG(5, 6)))
	qt, kt, vt := conv(q), conv(k), conv(v)
	if _, err := fn(qt, kt, vt, labShape, nil); err != nil { // warm-up
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := fn(qt, kt, vt, labShape, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	b.ReportMetric(0, "ns/op")
}

func same(x []float32) []float32 { return x }

// BenchmarkNaive is the lab's naive path (matmul, scale, softmax, matmul,
// each materialised) at [32, 8, 128, 64] float32.
func BenchmarkNaive(b *testing.B) { benchSlices(b, same, Naive) }

// BenchmarkFused is the tiled online-softmax kernel at [32, 8, 128, 64]
// float32.
func BenchmarkFused(b *testing.B) { benchSlices(b, same, Fused) }

// BenchmarkFusedInto is BenchmarkFused writing into one output buffer
// reused across calls (no fresh 33.5 MB to fault in each call).
func BenchmarkFusedInto(b *testing.B) {
	q, k, v := randomInputs(labShape, rand.New(rand.NewPCG(5, 6)))
	out := make([]float32, labShape.QSize())
	for b.Loop() {
		if err := FusedInto(out, q, k, v, labShape, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNaiveFloat16 is BenchmarkNaive on float16 inputs and output.
func BenchmarkNaiveFloat16(b *testing.B) { benchSlices(b, toHalf, NaiveFloat16) }

// BenchmarkFusedFloat16 is BenchmarkFused on float16 inputs and output.
func BenchmarkFusedFloat16(b *testing.B) { benchSlices(b, toHalf, FusedFloat16) }

// benchSpeedup runs naive and fused alternately (so that a busy machine
// slows both alike) and reports each one's ms/op and the speedup
// naive/fused.
func benchSpeedup[T any](b *testing.B, conv func([]float32) []T, naive, fused func(q, k, v []T, s Shape, o *Options) ([]T, error)) {
	q, k, v := randomInputs(labShape, rand.New(rand.NewPCG(5, 6)))
	qt, kt, vt := conv(q), conv(k), conv(v)
	var tn, tf time.Duration
	run := func(fn func(q, k, v []T, s Shape, o *Options) ([]T, error), total *time.Duration) {
		t0 := time.Now()
		if _, err := fn(qt, kt, vt, labShape, nil); err != nil {
			b.Fatal(err)
		}
		*total += time.Since(t0)
	}
	run(naive, &tn) // warm-up
	run(fused, &tf)
	tn, tf = 0, 0
	b.ResetTimer()
	for b.Loop() {
		run(naive, &tn)
		run(fused, &tf)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tn.Microseconds())/1e3/n, "naive-ms/op")
	b.ReportMetric(float64(tf.Microseconds())/1e3/n, "fused-ms/op")
	b.ReportMetric(float64(tn)/float64(tf), "speedup")
	b.ReportMetric(0, "ns/op")
	b.Logf("kernels: %s", SIMDLevel())
}

// BenchmarkSpeedup is Naive against Fused, interleaved, at
// [32, 8, 128, 64] float32.
func BenchmarkSpeedup(b *testing.B) { benchSpeedup(b, same, Naive, Fused) }

// BenchmarkSpeedupFloat16 is BenchmarkSpeedup in float16.
func BenchmarkSpeedupFloat16(b *testing.B) { benchSpeedup(b, toHalf, NaiveFloat16, FusedFloat16) }

// benchGraph times NaiveGraph compiled on the test backend (the Go
// backend unless GOMLX_BACKEND says otherwise) at the lab's shape, the
// same input tensors at every call.
func benchGraph(b *testing.B, half bool) {
	be := testBackend(b)
	q, k, v := randomInputs(labShape, rand.New(rand.NewPCG(5, 6)))
	args := qkvTensors(q, k, v, labShape)
	if half {
		d := []int{labShape.Batch, labShape.Heads, labShape.SeqQ, labShape.HeadDim}
		args = []any{tensors.FromFlatDataAndDimensions(toHalf(q), d...),
			tensors.FromFlatDataAndDimensions(toHalf(k), d...), tensors.FromFlatDataAndDimensions(toHalf(v), d...)}
	}
	exec, err := graph.NewExec(be, func(q, k, v *graph.Node) *graph.Node { return NaiveGraph(q, k, v, nil, 0) })
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		out, err := exec.Exec1(args...)
		if err != nil {
			b.Fatal(err)
		}
		out.FinalizeAll()
	}
	run() // compile and warm up
	b.ResetTimer()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNaiveGraph is NaiveGraph compiled on the Go backend, float32.
func BenchmarkNaiveGraph(b *testing.B) { benchGraph(b, false) }

// BenchmarkNaiveGraphFloat16 is NaiveGraph compiled on the Go backend,
// float16.
func BenchmarkNaiveGraphFloat16(b *testing.B) { benchGraph(b, true) }

// BenchmarkFusedTensors is FusedTensors (the graph-break path) on float32
// tensors.
func BenchmarkFusedTensors(b *testing.B) {
	q, k, v := randomInputs(labShape, rand.New(rand.NewPCG(5, 6)))
	args := qkvTensors(q, k, v, labShape)
	qt, kt, vt := args[0].(*tensors.Tensor), args[1].(*tensors.Tensor), args[2].(*tensors.Tensor)
	for b.Loop() {
		out, err := FusedTensors(qt, kt, vt, nil, 0, false)
		if err != nil {
			b.Fatal(err)
		}
		out.FinalizeAll()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
	b.ReportMetric(0, "ns/op")
}
