package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/gomase/gomase/kernels/mxint8"
	"github.com/gomase/gomase/mase/lab/labsetup"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/perf"
)

// mxint8Throughput is what `mase bench mxint8` measured for one size.
type mxint8Throughput struct {
	Values     int     `json:"values"`
	GroupSize  int     `json:"group_size"`
	Bytes      int     `json:"bytes_moved"`      // packed input + bf16 output
	CopyBytes  int     `json:"copy_bytes_moved"` // the copy's reads + writes
	KernelGBs  float64 `json:"dequantize_gb_per_s"`
	CopyGBs    float64 `json:"copy_gb_per_s"`
	KernelCopy float64 `json:"dequantize_over_copy"`
}

// runBenchMXInt8 is `mase bench mxint8`: the Go dequantisation kernel's
// throughput next to a copy that moves as many bytes (perf.DequantThroughput:
// each the median of --reps timings, taken alternately), and
// the parameter memory of bert-tiny (and with --large a 12 × 768 BERT)
// packed to MXINT8, Linear layers only and with the embeddings.
func runBenchMXInt8(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench mxint8", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gs := fs.Int("group-size", 32, "MXINT8 group size (8, 16, 32, 64, 128, 256 or 512)")
	n := fs.Int("values", 4<<20, "values dequantised per timing")
	reps := fs.Int("reps", 21, "timings of each (the median is reported)")
	large := fs.Bool("large", false, "also report a 12-layer × 768 BERT (random weights; packing takes a while)")
	be := fs.String("backend", "", "time the GoMLX dequantisation graph (mxint8.DequantizeGraph) on this backend instead of the Go kernel: "+backendNames)
	loop := fs.Int("loop", 20, "with --backend: dequantisations repeated inside one executable per timing, so the figure leaves out the per-call dispatch")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if err := mxint8.CheckGroupSize(*gs); err != nil {
		return err
	}
	if *n < *gs {
		return fmt.Errorf("--values must be ≥ the group size (got %d, group size %d)", *n, *gs)
	}
	if err := checkRepsAndLoop(*reps, *loop); err != nil {
		return err
	}
	// float32 source, int8 mantissas, bfloat16 output and the float32
	// reference: about 11 bytes a value, 16 counted.
	need, ok := limits.Mul(int64(*n), 16)
	if err := limits.Work(fmt.Sprintf("--values %d", *n), need, ok); err != nil {
		return err
	}
	if *be != "" {
		onBackend, err := benchBackend(be)
		if err != nil {
			return err
		}
		r, err := perf.MXInt8Graph(onBackend, *n, *gs, *loop, *reps)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, r)
		}
		exact := "bit-exact with the reference"
		if !r.BitExact {
			exact = "NOT bit-exact with the reference"
		}
		fmt.Fprintf(stdout, "dequantize graph on %s, %d values (group %d, %d bytes moved), %d per executable, median of %d: %.4f ms = %.2f GB/s (%s); elementwise pass over the same bytes %.4f ms = %.2f GB/s; ratio %.0f%%; dispatch floor %.4f ms per executable call\n",
			r.Backend, r.Values, r.GroupSize, r.Bytes, r.Reps, r.Timings, r.DequantMs, r.DequantGBs, exact, r.ElementwiseMs, r.ElementwiseGBs, 100*r.Ratio, r.DispatchFloorMs)
		if r.Kernels != "" {
			fmt.Fprintln(stdout, r.Kernels+" (packed models call the MXINT8 kernel; this graph is GoMLX's: the kernel's own figure is cuda.test's BenchmarkDeviceMXInt8)")
		}
		return nil
	}
	rows, err := perf.DequantThroughput([]int{*n}, *gs, *reps)
	if err != nil {
		return err
	}
	r := rows[0]
	th := mxint8Throughput{Values: r.Values, GroupSize: *gs, Bytes: r.Bytes, CopyBytes: r.CopyBytes, KernelGBs: r.KernelGBs, CopyGBs: r.CopyGBs,
		KernelCopy: r.KernelOverCopy}
	reports := []*labsetup.MemoryFigures{}
	cfgs := []struct {
		name string
		cfg  models.BertConfig
	}{{"bert-tiny", models.BertTinyConfig()}}
	if *large {
		cfgs = append(cfgs, struct {
			name string
			cfg  models.BertConfig
		}{"bert 12 × 768", labsetup.LargeBertConfig()})
	}
	for _, c := range cfgs {
		fmt.Fprintf(stderr, "packing %s\n", c.name)
		r, err := labsetup.MXINT8MemoryReport(c.name, c.cfg, 1, *gs)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{"throughput": th, "memory": reports})
	}
	fmt.Fprintf(stdout, "dequantize %d values (group %d, %d bytes moved): %.2f GB/s; copy of %d bytes (%d moved, read + write): %.2f GB/s; ratio %.0f%%\n",
		th.Values, th.GroupSize, th.Bytes, th.KernelGBs, th.CopyBytes/2, th.CopyBytes, th.CopyGBs, 100*th.KernelCopy)
	for _, r := range reports {
		fmt.Fprintln(stdout, r.String())
	}
	return nil
}
