package perf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/kernels/mxint8"
)

// AgreementRow is one group size of DequantAgreement: how many values
// were decoded and how many of them each dequantiser decoded to other
// bfloat16 bits than the lab's bit trick (DequantizeReference).
type AgreementRow struct {
	GroupSize int     `json:"group_size"`
	Values    int     `json:"values"`
	Bits      float64 `json:"bits_per_value"`
	Formula   int     `json:"formula_mismatches"`
	Kernel    int     `json:"simd_kernel_mismatches"`
	Graph     int     `json:"graph_op_mismatches"`
}

// DequantAgreement checks, for every group size, the four dequantisers
// against each other: DequantizeFormula, the SIMD kernel (DequantizeNew)
// and the GoMLX op (DequantizeGraph on be) against DequantizeReference, on
// n random values of magnitudes 2^−20…2^20 (n not a multiple of the group:
// a partial last group) and on EveryEncoding.
func DequantAgreement(be compute.Backend, n int) ([]AgreementRow, error) {
	var rows []AgreementRow
	for _, gs := range mxint8.GroupSizes {
		rng := rand.New(rand.NewPCG(uint64(gs), 9))
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-20))
		}
		random, err := mxint8.Pack(vals, gs)
		if err != nil {
			return nil, err
		}
		every, err := mxint8.EveryEncoding(gs)
		if err != nil {
			return nil, err
		}
		row := AgreementRow{GroupSize: gs, Bits: random.BitsPerElement()}
		for _, p := range []*mxint8.Packed{random, every} {
			ref := mxint8.DequantizeReference(p)
			onGraph, err := dequantizeGraph(be, p)
			if err != nil {
				return nil, err
			}
			row.Values += p.Len()
			row.Formula += mismatches(mxint8.DequantizeFormula(p), ref)
			row.Kernel += mismatches(mxint8.DequantizeNew(p), ref)
			row.Graph += mismatches(onGraph, ref)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// dequantizeGraph runs mxint8.DequantizeGraph on p in a GoMLX computation
// on be.
func dequantizeGraph(be compute.Backend, p *mxint8.Packed) ([]bfloat16.BFloat16, error) {
	var buildErr error
	out, err := graph.ExecOnce(be, func(m, e *graph.Node) *graph.Node {
		y, err := mxint8.DequantizeGraph(m, e, p.GroupSize())
		if err != nil {
			buildErr = err
			return graph.ConvertDType(m, dtypes.BFloat16)
		}
		return y
	}, tensors.FromValue(p.Mantissas()), tensors.FromValue(p.Exponents()))
	if buildErr != nil {
		return nil, buildErr
	}
	if err != nil {
		return nil, err
	}
	defer out.MustFinalizeAll()
	return tensors.CopyFlatData[bfloat16.BFloat16](out)
}

// mismatches counts the positions where got differs from want.
func mismatches(got, want []bfloat16.BFloat16) int {
	n := 0
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			n++
		}
	}
	return n
}

// AgreementMarkdown is DequantAgreement's table and verdict.
func AgreementMarkdown(rows []AgreementRow) string {
	var b strings.Builder
	b.WriteString("| group size | values | bits per value | formula ≠ bit trick | SIMD kernel ≠ bit trick | GoMLX op ≠ bit trick |\n|---|---|---|---|---|---|\n")
	total, bad := 0, 0
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %.4g | %d | %d | %d |\n", r.GroupSize, r.Values, r.Bits, r.Formula, r.Kernel, r.Graph)
		total += r.Values
		bad += r.Formula + r.Kernel + r.Graph
	}
	if bad == 0 {
		fmt.Fprintf(&b, "\nAll %d values decode to the same bfloat16 bits with the four dequantisers, for every group size.\n", total)
	} else {
		fmt.Fprintf(&b, "\n**%d mismatches** in %d values: the dequantisers disagree.\n", bad, total)
	}
	return b.String()
}

// ThroughputRow is one size of DequantThroughput.
type ThroughputRow struct {
	Values int `json:"values"`
	// Bytes is what a dequantisation moves: the packed input read plus the
	// bfloat16 output written.
	Bytes int `json:"bytes"`
	// CopyBytes is what the copy baseline moves: copy() of CopyBytes/2
	// bytes reads and writes that many, so it moves as many bytes as a
	// dequantisation (one fewer when Bytes is odd).
	CopyBytes                      int           `json:"copy_bytes"`
	Kernel, Loop, Copy             time.Duration `json:"-"`
	KernelGBs, LoopGBs             float64       `json:"-"`
	CopyGBs                        float64       `json:"-"`
	KernelOverCopy, KernelOverLoop float64       `json:"-"`
}

// DequantThroughput times the SIMD kernel (Dequantize) and the lab's
// bit-trick loop (DequantizeReference, which allocates its output on every
// call as the lab's wrapper does) against a copy() that moves as many
// bytes (half of them read, half written: CopyBytes), for
// each size in groups of groupSize: reps rounds, the three taking turns,
// small sizes repeated inside a round to measurable times; each figure is
// the median round.
func DequantThroughput(sizes []int, groupSize, reps int) ([]ThroughputRow, error) {
	var rows []ThroughputRow
	for _, n := range sizes {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64())
		}
		p, err := mxint8.Pack(vals, groupSize)
		if err != nil {
			return nil, err
		}
		out := make([]bfloat16.BFloat16, n)
		bytes := p.Bytes() + 2*n
		src, dst := make([]byte, bytes/2), make([]byte, bytes/2)
		inner := max(1, (1<<20)/n)
		var kt, lt, ct []time.Duration
		for range reps {
			start := time.Now()
			for range inner {
				if err := mxint8.Dequantize(out, p); err != nil {
					return nil, err
				}
			}
			kt = append(kt, time.Since(start)/time.Duration(inner))
			start = time.Now()
			for range inner {
				_ = mxint8.DequantizeReference(p)
			}
			lt = append(lt, time.Since(start)/time.Duration(inner))
			start = time.Now()
			for range inner {
				copy(dst, src)
			}
			ct = append(ct, time.Since(start)/time.Duration(inner))
		}
		r := ThroughputRow{Values: n, Bytes: bytes, CopyBytes: CopyMoves(len(src)), Kernel: Median(kt), Loop: Median(lt), Copy: Median(ct)}
		r.KernelGBs, r.LoopGBs, r.CopyGBs = GBs(r.Bytes, r.Kernel), GBs(r.Bytes, r.Loop), GBs(r.CopyBytes, r.Copy)
		r.KernelOverCopy, r.KernelOverLoop = r.KernelGBs/r.CopyGBs, r.KernelGBs/r.LoopGBs
		rows = append(rows, r)
	}
	return rows, nil
}

// CopyMoves is the bytes copy() of n bytes moves: n read and n written.
func CopyMoves(n int) int { return 2 * n }

// GBs is a rate: bytes moved in d, in GB/s (10⁹ bytes a second).
func GBs(bytes int, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e9 }

// ThroughputMarkdown is DequantThroughput's table and a sentence on its
// largest and smallest sizes.
func ThroughputMarkdown(rows []ThroughputRow) string {
	var b strings.Builder
	b.WriteString("| values | bytes moved | SIMD kernel | GB/s | bit-trick loop | GB/s | copy GB/s | kernel / copy |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %d | %s | %.1f | %s | %.1f | %.1f | %.0f%% |\n", r.Values, r.Bytes, Dur(r.Kernel), r.KernelGBs, Dur(r.Loop), r.LoopGBs, r.CopyGBs, 100*r.KernelOverCopy)
	}
	if len(rows) > 1 {
		big, small := rows[len(rows)-1], rows[0]
		fmt.Fprintf(&b, "\nAt %d values (%.1f MB moved) the SIMD kernel runs at %.0f%% of a copy's rate and %.0f× "+
			"the bit-trick loop's; at %d values (%d bytes) at %.0f%% of a copy's rate and %.0f× the loop's.\n",
			big.Values, float64(big.Bytes)/1e6, 100*big.KernelOverCopy, big.KernelOverLoop, small.Values, small.Bytes, 100*small.KernelOverCopy, small.KernelOverLoop)
	}
	return b.String()
}
