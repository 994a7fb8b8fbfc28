package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/compileopt"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/perf"
	"github.com/gomase/gomase/mase/trace"
)

const benchUsage = "compile|sdpa|mxint8 ...: compile [--model bert-tiny|resnet18] [--batch B] [--seq L] [--image H] [--iters 5,50,200] [--warmup W] [--backend go|go:<options>|xla:cuda|xla:PATH] [--rewrites all|none|LIST] [--eager-rewritten] [--mxint8 GROUP] [--json] | sdpa [--shape 32,8,128,64] [--dtype float32|float16] [--reps R] [--backend B [--loop N]] [--json] | mxint8 [--group-size 32] [--values N] [--reps R] [--large] [--backend B [--loop N]] [--json]"

func init() {
	register(command{
		name:          "bench",
		usage:         benchUsage,
		short:         "time Lab 4's experiments: compile = compiled vs eager execution of one model (first call, steady state, the lab's n-call mean, break-even); sdpa = naive vs fused attention; mxint8 = dequantisation throughput vs a memory copy, and the packed-model memory report",
		run:           runBench,
		heavy:         true,
		timesForwards: true,
	})
}

// maxBenchCalls bounds the calls a benchmark times per mode (--iters,
// --reps): each is kept, and each takes at least a dispatch.
const maxBenchCalls = 100000

// backendNames says what a --backend flag takes.
var backendNames = "go, go:<options>, xla:cuda (XLA on a CUDA PJRT plugin found on disk, e.g. JAX's; " +
	backend.CUDAPluginEnv + " names one) or xla:PATH (XLA on the PJRT plugin at PATH)"

// backendFlag is the --backend flag of the benchmarks.
func backendFlag(fs *flag.FlagSet) *string {
	return fs.String("backend", "", "compute backend: "+backendNames+"; default $GOMLX_BACKEND, else go (docs/GPU.md)")
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// benchBackend opens the backend a --backend flag names; empty is the
// shared backend ($GOMLX_BACKEND, else go), and the flag is set to its
// spec.
func benchBackend(spec *string) (compute.Backend, error) {
	if *spec == "" {
		*spec = backend.DefaultSpec()
		return backend.Default()
	}
	be, err := backend.Open(*spec)
	if err != nil {
		return nil, fmt.Errorf("--backend: %w", err)
	}
	return be, nil
}

func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "sdpa" {
		return runBenchSDPA(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "mxint8" {
		return runBenchMXInt8(args[1:], stdout, stderr)
	}
	if len(args) == 0 {
		return fmt.Errorf("want a benchmark, compile, sdpa or mxint8: usage: mase bench %s", benchUsage)
	}
	if args[0] != "compile" {
		return fmt.Errorf("unknown benchmark %q: want a benchmark, compile, sdpa or mxint8: usage: mase bench %s", args[0], benchUsage)
	}
	fs := flag.NewFlagSet("bench compile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "bert-tiny", "model: bert-tiny or resnet18 (ImageNet shape, 1000 classes)")
	image := fs.Int("image", 224, "image height and width (resnet18)")
	batch := fs.Int("batch", 8, "batch size")
	seq := fs.Int("seq", 128, "sequence length (bert-tiny)")
	iters := fs.String("iters", "5,50,200", "n of the lab's figure (mean over the first n calls, no warm-up); the run makes max(n) calls per mode")
	warmup := fs.Int("warmup", 5, "calls left out of the steady-state statistics")
	be := backendFlag(fs)
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	seed := fs.Uint64("seed", 1, "seed of the random weights and inputs")
	rewriteList := fs.String("rewrites", "all", "compiled-mode rewrites: all, none, or a comma-separated list of "+strings.Join(compileopt.Names(), ", "))
	packGroup := fs.Int("mxint8", 0, "pack the model's Linear layers as MXINT8 with this group size first (QLinearPacked; 0: do not)")
	eagerRewritten := fs.Bool("eager-rewritten", false, "run eager mode on the rewritten graph too (same kernels in both modes: what whole-graph compilation alone gives)")
	if err := parseFlagsOnly(fs, args[1:]); err != nil {
		return err
	}
	rewrites, err := compileopt.ParseSelection(*rewriteList)
	if err != nil {
		return fmt.Errorf("--rewrites: %w", err)
	}
	ns, err := parseInts("--iters", *iters)
	if err != nil {
		return err
	}
	for _, n := range ns {
		if n < 1 || n > maxBenchCalls {
			return fmt.Errorf("--iters %d is out of range (allowed: 1 to %d calls per mode)", n, maxBenchCalls)
		}
	}
	if err := checkForwardSizes(*batch, *seq, *image); err != nil {
		return err
	}
	if err := checkForwardMemory("compile ", *model, *batch, *seq, *image, *be, false, 0); err != nil {
		return err
	}
	onBackend, err := benchBackend(be)
	if err != nil {
		return err
	}
	m, inputs, traced, err := benchModel(*model, *batch, *seq, *image, *seed)
	if err != nil {
		return err
	}
	if *packGroup != 0 {
		mg, err := mase.NewMaseGraph(m, traced)
		if err != nil {
			return err
		}
		if _, _, err := passes.PackLinears(mg, passes.PackOptions{GroupSize: *packGroup}); err != nil {
			return fmt.Errorf("--mxint8: %w", err)
		}
	}
	g, err := trace.Trace(m, traced)
	if err != nil {
		return err
	}
	var report *compileopt.Report
	newRunner := func(mode string) (execute.Runner, error) {
		if mode == perf.Compiled {
			// Compiled mode rewrites its own trace; eager runs g as traced.
			cg, err := trace.Trace(m, traced)
			if err != nil {
				return nil, err
			}
			r, rep, err := compileopt.NewCompiled(onBackend, &ir.MaseGraph{Model: m, Graph: cg}, execute.Mode{}, rewrites)
			report = rep
			return r, err
		}
		if *eagerRewritten {
			if _, err := compileopt.Optimize(&ir.MaseGraph{Model: m, Graph: g}, execute.Mode{}, rewrites); err != nil {
				return nil, err
			}
		}
		return execute.NewEagerOn(onBackend, &ir.MaseGraph{Model: m, Graph: g}, execute.Mode{})
	}
	workload := fmt.Sprintf("%s forward, batch %d × %d tokens, eval mode, backend %s", *model, *batch, *seq, *be)
	if *model == "resnet18" {
		workload = fmt.Sprintf("resnet18 forward, batch %d × 3 × %d × %d, eval mode, backend %s", *batch, *image, *image, *be)
	}
	if *packGroup != 0 {
		workload += fmt.Sprintf(", Linear layers packed as MXINT8 (group size %d)", *packGroup)
	}
	// The inputs live on the device for the whole timing, as a PyTorch
	// timing keeps its batch on the GPU.
	for _, t := range inputs {
		if err := t.MaterializeOnDevice(onBackend, false, 0); err != nil {
			return fmt.Errorf("putting the inputs on the device: %w", err)
		}
		defer t.FinalizeAll()
	}
	c, err := perf.Compare(workload, newRunner, inputs, perf.Options{Iters: ns, Warmup: *warmup,
		Progress: func(mode string, calls int) { fmt.Fprintf(stderr, "%s: %d calls\n", mode, calls) }})
	if err != nil {
		return err
	}
	if c.DispatchFloor, err = perf.DispatchFloor(onBackend, 50); err != nil {
		return err
	}
	if !backend.IsGo(onBackend) {
		c.Notes = append(c.Notes, backend.Kernels(onBackend).String())
	}
	if report != nil {
		c.Notes = append(c.Notes, "compiled-mode rewrites: "+report.String())
		if *eagerRewritten {
			c.Notes = append(c.Notes, "eager mode ran the rewritten graph (host kernels included)")
		}
	}
	if *asJSON {
		return writeJSON(stdout, c)
	}
	fmt.Fprint(stdout, c.Format())
	return nil
}

// benchModel builds a benchmark's model with random weights from seed and
// random inputs: bert-tiny on token ids [batch, seq] (traced with
// input_ids only), or resnet18 on images [batch, 3, image, image].
func benchModel(model string, batch, seq, image int, seed uint64) (*nn.Model, map[string]*tensors.Tensor, []string, error) {
	switch model {
	case "bert-tiny":
		m, err := models.NewBertTiny(seed)
		if err != nil {
			return nil, nil, nil, err
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		ids := make([]int32, batch*seq)
		for i := range ids {
			ids[i] = int32(1000 + rng.IntN(29000))
		}
		return m, map[string]*tensors.Tensor{"input_ids": tensors.FromFlatDataAndDimensions(ids, batch, seq)}, []string{"input_ids"}, nil
	case "resnet18":
		m, err := models.NewResNet18(1000, seed)
		if err != nil {
			return nil, nil, nil, err
		}
		return m, map[string]*tensors.Tensor{"x": models.RandomImages(seed, batch, image, image)}, nil, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown --model %q (allowed: bert-tiny, resnet18)", model)
}
