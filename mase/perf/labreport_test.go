package perf

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/models"
)

// comparisonOf builds a Comparison from scripted call times, as Compare
// fills it.
func comparisonOf(comp, eager []time.Duration, iters []int, warmup int) *Comparison {
	c := &Comparison{Workload: "w", Warmup: warmup, Iters: iters}
	for _, m := range []struct {
		name  string
		calls []time.Duration
	}{{Compiled, comp}, {Eager, eager}} {
		mt := ModeTiming{Mode: m.name, First: m.calls[0], Steady: Summarise(m.calls[warmup:]), LabMean: map[int]time.Duration{}, Calls: m.calls}
		for _, n := range iters {
			mt.LabMean[n] = mt.LabCurve()[n-1]
		}
		c.Modes = append(c.Modes, mt)
	}
	c.Speedup = float64(c.Modes[1].Steady.Mean) / float64(c.Modes[0].Steady.Mean)
	c.MedianSpeedup = float64(c.Modes[1].Steady.Median) / float64(c.Modes[0].Steady.Median)
	c.BreakEven, c.BreakEvenMeasured = breakEven(c.Modes[0], c.Modes[1])
	return c
}

// TestComparisonMarkdown: the lab's verdict and break-even read from the
// numbers, compiled first slower then ahead.
func TestComparisonMarkdown(t *testing.T) {
	ms := time.Millisecond
	comp := []time.Duration{90 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms}
	eager := []time.Duration{20 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms, 10 * ms}
	c := comparisonOf(comp, eager, []int{5, 10}, 2)
	md := c.Markdown()
	for _, want := range []string{"| compiled | 90 ms |", "lab mean, n = 5", "lab mean, n = 10"} {
		if !strings.Contains(md, want) {
			t.Errorf("table lacks %q:\n%s", want, md)
		}
	}
	f := c.Findings()
	for _, want := range []string{"slower, as in the lab", "a speedup of 5.00×", "from n = 10 calls"} {
		if !strings.Contains(f, want) {
			t.Errorf("findings lack %q:\n%s", want, f)
		}
	}
	if got := c.LabSpeedup(); got < 0.61 || got > 0.62 {
		t.Errorf("lab speedup %v, want 12/19.6", got)
	}
	if Dur(1500*time.Microsecond) != "1.5 ms" || Dur(2*time.Second) != "2 s" || Dur(12*time.Microsecond) != "12 µs" {
		t.Error("Dur")
	}
}

// TestRewritesAndPacked runs the rewrite comparisons on a small bert-tiny
// batch: every runner timed, the table and findings name each rewrite left
// out.
func TestRewritesAndPacked(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles bert-tiny a dozen times")
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewBertTiny(1)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int32, 16)
	for i := range ids {
		ids[i] = int32(1000 + rng.IntN(1000))
	}
	inputs := map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, 2, 8)}
	a, err := Rewrites(be, "bert-tiny", m, []string{"input_ids"}, inputs, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runners) != 4+len(a.LeftOut) || len(a.LeftOut) == 0 {
		t.Fatalf("%d runners, %d left out", len(a.Runners), len(a.LeftOut))
	}
	names, speedups := a.Bars()
	if len(names) != len(a.Runners)-1 || len(speedups) != len(names) {
		t.Errorf("bars %v %v", names, speedups)
	}
	if md, f := a.Markdown(), a.Findings(); !strings.Contains(md, "compiled, every rewrite but "+a.LeftOut[0]) || !strings.Contains(f, "`"+a.LeftOut[0]+"`") {
		t.Errorf("table or findings lack %s:\n%s\n%s", a.LeftOut[0], md, f)
	}
	total, rewrites, compiling, _ := a.SpeedupParts()
	if d := total - rewrites*compiling; d > 1e-9*total || d < -1e-9*total {
		t.Errorf("speed-up %v is not the product of its parts %v × %v", total, rewrites, compiling)
	}
	if f := a.Findings(); !strings.Contains(f, "the rewrites' part") {
		t.Errorf("findings do not split the speed-up:\n%s", f)
	}
	p, err := PackedRewrite(be, "packed", m, []string{"input_ids"}, inputs, 32, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runners) != 3 || len(p.Pack.Layers) == 0 || !strings.Contains(p.Markdown(), "host dequantiser") {
		t.Errorf("packed comparison %+v", p)
	}
}

// TestKernelReports runs the attention and MXINT8 benchmarks at toy sizes:
// the all-ones check holds, the kernels agree with the references, the
// dequantisers agree bit for bit.
func TestKernelReports(t *testing.T) {
	r, err := SDPAKernels([4]int{1, 2, 16, 8}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.NotOne != 0 || r.OnesNaive != 1 || len(r.Rows) != 2 || r.Rows[0].FusedErr > 1e-5 || r.Rows[1].FusedErr > 1e-2 {
		t.Errorf("SDPA report %+v", r)
	}
	if md := r.Markdown(); !strings.Contains(md, "outputs other than 1.0: 0 of 256") {
		t.Errorf("SDPA markdown:\n%s", md)
	}
	be, err := backend.Default()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := DequantAgreement(be, 77)
	if err != nil {
		t.Fatal(err)
	}
	if md := AgreementMarkdown(rows); !strings.Contains(md, "same bfloat16 bits with the four dequantisers") {
		t.Errorf("agreement:\n%s", md)
	}
	tp, err := DequantThroughput([]int{1 << 10, 1 << 12}, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(tp) != 2 || tp[1].Bytes != (1<<12)+(1<<12)/32+2<<12 || !strings.Contains(ThroughputMarkdown(tp), "At 4096 values") {
		t.Errorf("throughput %+v", tp)
	}
	rs, err := SDPAGraphs(be, [4]int{1, 2, 16, 8}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if md := SDPAGraphsMarkdown(be, [4]int{1, 2, 16, 8}, rs); !strings.Contains(md, "| float32 | no |") {
		t.Errorf("graphs:\n%s", md)
	}
}

// TestThroughputCountsTheBytesEachMoves pins what each rate divides by: the
// dequantiser reads the mantissas and exponents and writes two bytes a value;
// the copy baseline reads and writes half of that each, so both move as many.
func TestThroughputCountsTheBytesEachMoves(t *testing.T) {
	const n, group = 1 << 10, 32
	rows, err := DequantThroughput([]int{n}, group, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if want := n + n/group + 2*n; r.Bytes != want {
		t.Errorf("dequantisation moves %d bytes, counted %d", want, r.Bytes)
	}
	if r.CopyBytes != r.Bytes {
		t.Errorf("the copy moves %d bytes, the dequantisation %d: the rates do not compare like with like", r.CopyBytes, r.Bytes)
	}
	if CopyMoves(100) != 200 {
		t.Errorf("copy() of 100 bytes moves 200 (read + write), counted %d", CopyMoves(100))
	}
	if r.KernelGBs != GBs(r.Bytes, r.Kernel) || r.CopyGBs != GBs(r.CopyBytes, r.Copy) || r.LoopGBs != GBs(r.Bytes, r.Loop) {
		t.Errorf("rates %+v are not the bytes each moves over its time", r)
	}
}

func TestPercent(t *testing.T) {
	for share, want := range map[float64]string{0.0031: "0.31%", 0.042: "4.2%", 0.37: "37%", 0: "0%", 1: "100%"} {
		if got := Percent(share); got != want {
			t.Errorf("Percent(%v) = %q, want %q", share, got, want)
		}
	}
}
