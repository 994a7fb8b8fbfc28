package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/perf"
)

const profileUsage = "--model bert-tiny|resnet18 [--mode eager|compiled] [--batch B] [--seq L] [--image H] [--runs R] [--backend B] [--trace OUT.json] [--roofline] [--rewrites all|none|LIST] [--xla-dump DIR] [--top N] [--json]"

func init() {
	register(command{
		name:          "profile",
		usage:         profileUsage,
		short:         "profile one model's forward in eager or compiled mode: a timeline of every executable call, host kernel and compile (Chrome trace JSON for Perfetto), and the top nodes by time with their FLOPs and bytes",
		run:           runProfile,
		heavy:         true,
		timesForwards: true,
	})
}

// The sizes --roofline measures the backend's peaks at: a matmul of
// rooflineMatmul², an element-wise pass over rooflineValues floats.
const (
	rooflineMatmul = 1024
	rooflineValues = 1 << 26
)

// traceHeader starts every trace file profile writes; an existing --trace
// file that does not start with it is not overwritten.
var traceHeader = []byte(`{"traceEvents":`)

func runProfile(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "bert-tiny", "model: bert-tiny or resnet18 (ImageNet shape, 1000 classes)")
	mode := fs.String("mode", perf.Eager, "execution mode: eager (a node at a time) or compiled (the whole graph, host kernels apart)")
	batch := fs.Int("batch", 8, "batch size")
	seq := fs.Int("seq", 128, "sequence length (bert-tiny)")
	image := fs.Int("image", 224, "image height and width (resnet18)")
	runs := fs.Int("runs", 10, "timed runs after the first (which compiles)")
	top := fs.Int("top", 15, "nodes in the table (0: all)")
	traceOut := fs.String("trace", "", "write the timeline as Chrome trace JSON to this file (open it in https://ui.perfetto.dev or chrome://tracing)")
	asJSON := fs.Bool("json", false, "print the profile as JSON")
	roofline := fs.Bool("roofline", false, "measure the backend's peaks (a 1024² float32 matmul, an element-wise pass over 64 Mi floats) and place every node on the roofline")
	seed := fs.Uint64("seed", 1, "seed of the random weights and inputs")
	rewriteList := fs.String("rewrites", "none", "compiled-mode rewrites to apply to the graph first, in either mode: all, none, or a comma-separated list of "+strings.Join(compileopt.Names(), ", ")+" (`mase bench compile` applies all)")
	xlaDump := fs.String("xla-dump", "", "on an XLA backend, make XLA write every module it compiles to this new or empty folder as HLO text, and list them (the optimised modules show XLA's fusions and kernels)")
	be := backendFlag(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	rewrites, err := compileopt.ParseSelection(*rewriteList)
	if err != nil {
		return fmt.Errorf("--rewrites: %w", err)
	}
	if *mode != perf.Eager && *mode != perf.Compiled {
		return fmt.Errorf("--mode %q: allowed are eager and compiled", *mode)
	}
	if err := checkForwardSizes(*batch, *seq, *image); err != nil {
		return err
	}
	if *runs < 1 || *runs > 10000 || *top < 0 {
		return fmt.Errorf("--runs must be 1..10000 and --top ≥ 0 (got %d, %d)", *runs, *top)
	}
	var peaksBytes int64
	if *roofline {
		peaksBytes = perf.PeaksBytes(rooflineMatmul, rooflineValues)
	}
	if err := checkForwardMemory("", *model, *batch, *seq, *image, *be, true, peaksBytes); err != nil {
		return err
	}
	if *traceOut != "" {
		if err := checkTraceTarget(*traceOut); err != nil {
			return err
		}
	}
	if *xlaDump != "" {
		if err := startXLADump(*xlaDump, *be); err != nil {
			return fmt.Errorf("--xla-dump: %w", err)
		}
	}
	onBackend, err := benchBackend(be)
	if err != nil {
		return err
	}
	m, inputs, traced, err := benchModel(*model, *batch, *seq, *image, *seed)
	if err != nil {
		return err
	}
	for _, t := range inputs {
		defer t.FinalizeAll()
	}
	workload := fmt.Sprintf("%s forward, batch %d × %d tokens, backend %s", *model, *batch, *seq, *be)
	if *model == "resnet18" {
		workload = fmt.Sprintf("resnet18 forward, batch %d × 3 × %d × %d, backend %s", *batch, *image, *image, *be)
	}
	p, _, rep, err := perf.ProfileMode(onBackend, workload, *mode, m, traced, inputs, *runs, rewrites)
	if err != nil {
		return err
	}
	if *traceOut != "" {
		var buf bytes.Buffer
		if err := p.Recorder().WriteChromeTrace(&buf, "gomase "+*mode+": "+workload); err != nil {
			return err
		}
		if err := atomicfile.Write(atomicfile.File{Path: *traceOut, Data: buf.Bytes()}); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		fmt.Fprintf(stderr, "wrote the timeline to %s (open it in https://ui.perfetto.dev or chrome://tracing)\n", *traceOut)
	}
	var peaks *perf.Peaks
	var points []perf.RooflinePoint
	if *roofline {
		if peaks, err = perf.MeasurePeaks(onBackend, rooflineMatmul, rooflineValues, 5); err != nil {
			return err
		}
		points = p.Roofline(peaks)
	}
	var hlo []perf.HLOModule
	if *xlaDump != "" {
		if hlo, err = perf.ReadHLODump(*xlaDump); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			*perf.RunProfile
			Peaks    *perf.Peaks          `json:"peaks,omitempty"`
			Roofline []perf.RooflinePoint `json:"roofline,omitempty"`
			HLO      []perf.HLOModule     `json:"hlo_modules,omitempty"`
		}{p, peaks, points, hlo})
	}
	p.Format(stdout, *top)
	if *xlaDump != "" {
		fmt.Fprintf(stdout, "XLA wrote %d optimised modules to %s:\n", len(hlo), *xlaDump)
		for _, h := range hlo {
			fmt.Fprintf(stdout, "  %s (%d bytes)\n", h.File, h.Bytes)
		}
	}
	if len(rewrites) > 0 {
		fmt.Fprintf(stdout, "rewrites: %s\n", rep)
	}
	if peaks != nil {
		fmt.Fprintf(stdout, "\nroofline: matmul %.1f GFLOP/s (%d²), element-wise %.1f GB/s, ridge %.2f FLOP/byte\n", peaks.MatmulGFlops, peaks.MatmulSize, peaks.CopyGBs, peaks.Ridge)
		fmt.Fprintf(stdout, "%-44s %12s %10s %12s %s\n", "node", "FLOP/byte", "GFLOP/s", "attainable", "bound")
		for i, pt := range points {
			if *top > 0 && i == *top {
				break
			}
			fmt.Fprintf(stdout, "%-44.44s %12.2f %10.2f %12.2f %s\n", pt.Name, pt.Intensity, pt.GFlopsPerS, pt.Attainable, pt.Bound)
		}
	}
	return nil
}

// startXLADump checks --xla-dump's folder (new, or empty: XLA writes its
// own file names there) and backend (an XLA one: the Go backend compiles no
// HLO), creates the folder and turns XLA's dump on.
func startXLADump(dir, spec string) error {
	if spec == "" {
		spec = backend.DefaultSpec()
	}
	s, err := backend.ParseSpec(spec)
	if err != nil {
		return err
	}
	if s.Backend != "xla" {
		return fmt.Errorf("the %s backend compiles no HLO: use it with --backend xla:cuda or xla:PATH", s)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: give a new or empty folder (XLA would mix its files with what is there)", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return backend.EnableXLADump(dir)
}

// checkTraceTarget refuses a --trace path that is a folder, or an existing
// file that is not a trace this command wrote (it would be lost).
func checkTraceTarget(path string) error {
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--trace %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("--trace %s: not a regular file (allowed: a new file, or a trace mase profile wrote)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--trace %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(traceHeader))
	if n, _ := io.ReadFull(f, head); n < len(head) || !bytes.Equal(head, traceHeader) {
		return fmt.Errorf("--trace %s: the file exists and is not a trace mase profile wrote; refusing to overwrite it (allowed: a new file, or an earlier trace)", path)
	}
	return nil
}
