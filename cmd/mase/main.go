// Command mase is the gomase command line: it traces and draws models, runs
// passes, tokenizes text and executes the lab notebooks headless.
//
// Each subcommand lives in its own file and registers itself in init with
// register; main only dispatches.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/datadir"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/pretrained"
	"github.com/gomase/gomase/mase/train"
)

// command is one `mase <name>` subcommand.
type command struct {
	name  string // the word after `mase`
	usage string // one line: the arguments it takes
	short string // one line: what it does
	// run executes the subcommand with the arguments after its name.
	run func(args []string, stdout, stderr io.Writer) error
	// heavy commands train, search or time models: a binary without the
	// SIMD kernels says so before running them (see simdWarning).
	heavy bool
	// timesForwards commands time inference: they run with backend.TuneGC's
	// collector setting (a training run is slower with it, docs/BENCHMARKS.md).
	timesForwards bool
}

// simdWarnings turns the warning of simdWarning on; the tests turn it off,
// so that what they check does not depend on how the test binary was built.
var simdWarnings = true

// simdWarning is what a binary built without GOEXPERIMENT=simd prints on
// amd64 before heavy work, or "" when it has the SIMD kernels (or runs
// where there are none).
func simdWarning(built bool, goarch string) string {
	if built || goarch != "amd64" {
		return ""
	}
	return "mase: this binary was built without GOEXPERIMENT=simd, so the Go backend's AVX2/AVX-512 matmuls and gomase's SIMD kernels " +
		"are off and training, attention and compiled mode run up to 2× slower; build it with `make build` " +
		"(GOEXPERIMENT=simd go build -o bin/mase ./cmd/mase) and run bin/mase"
}

var commands = map[string]command{}

// register adds a subcommand; it is called from the init of each file.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("mase: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mase <command> [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := commands[n]
		fmt.Fprintf(w, "  %-10s %s\n             %s\n", n, c.short, "mase "+n+" "+c.usage)
	}
}

// run dispatches args (without the program name) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(stderr, "mase: unknown command %q (allowed: %s)\n", args[0], strings.Join(names, ", "))
		return 2
	}
	if w := simdWarning(simdKernels, runtime.GOARCH); c.heavy && w != "" && simdWarnings {
		fmt.Fprintln(stderr, w)
	}
	if c.timesForwards {
		backend.TuneGC()
	}
	if err := c.run(args[1:], stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "mase %s: %v\n", c.name, oneLine(err.Error()))
		return 1
	}
	return 0
}

// dataDirFlag registers the --data-dir flag shared by the commands that
// read data.
func dataDirFlag(fs *flag.FlagSet) *string {
	return fs.String("data-dir", "", "data directory (default: ../shared/data beside the checkout, or $GOMASE_DATA_DIR)")
}

// useDataDir points the data lookup at dir for the rest of a command when
// dir is set; call the returned function when the command ends.
func useDataDir(dir string) (restore func()) {
	if dir == "" {
		return func() {}
	}
	datadir.SetDir(dir)
	return func() { datadir.SetDir("") }
}

// parseFlagsOnly parses args and rejects positional arguments.
func parseFlagsOnly(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// parseFlags is fs.Parse with one-line errors: a bad flag or value comes
// back as the error alone, without the usage text the flag package prints
// beside it; -h and --help print the usage as before.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	return err
}

// oneLine folds a multi-line error message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// pretrainedFlag is --pretrained of the commands that build bert-tiny.
func pretrainedFlag(fs *flag.FlagSet) *string {
	return fs.String("pretrained", pretrained.Auto, "where the model starts: off (a seeded random initialisation), auto (the labs' pretrained "+
		pretrained.LabsModel+" from a folder, the HuggingFace cache or the hub, else the random initialisation, saying why), "+
		"or a HuggingFace repository id or local folder that must load (HF_TOKEN, HF_ENDPOINT, HF_HUB_CACHE, HF_HUB_OFFLINE apply)")
}

// downloadProgress shows a hub download on w as one updating line (at
// most four updates a second, and the last).
func downloadProgress(w io.Writer) func(file string, done, total int64) {
	var last time.Time
	return func(file string, done, total int64) {
		if done < total && time.Since(last) < 250*time.Millisecond {
			return
		}
		last = time.Now()
		if total > 0 {
			fmt.Fprintf(w, "\rdownloading %s: %.1f of %.1f MB", file, float64(done)/1e6, float64(total)/1e6)
		} else {
			fmt.Fprintf(w, "\rdownloading %s: %.1f MB", file, float64(done)/1e6)
		}
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

// errStartTwice is the error of --pretrained given with --checkpoint.
var errStartTwice = errors.New("--pretrained chooses how the starting model is trained, and --checkpoint gives one already trained: give one of them")

// acceptUnsealedFlag is --accept-unsealed of the commands that take a
// --checkpoint.
func acceptUnsealedFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("accept-unsealed", false, "import a --checkpoint written before checksums (graph file version 1), which cannot be verified")
}

// checkStartCheckpoint imports a --checkpoint (when one is given) before
// any data is loaded or model trained, so that a wrong or unverifiable
// file is refused first, and prints the import's notes.
func checkStartCheckpoint(base string, acceptUnsealed bool, stderr io.Writer) error {
	if base == "" {
		return nil
	}
	_, rep, err := checkpoint.ImportWith(base, checkpoint.ImportOptions{AcceptUnsealed: acceptUnsealed})
	if err != nil {
		return err
	}
	for _, note := range rep.Notes {
		fmt.Fprintln(stderr, "note:", note)
	}
	return nil
}

// trainStart trains the starting model of a sweep or a search (compress,
// search --space mixed-precision) into o.Out, from o.Pretrained, for
// epochs epochs with base's seed and trainer; base's learning rate is used
// only when --lr was given (lrSet), else the start's default. It prints
// transformers' warnings, refuses a pretrained vocabulary other than
// bert-base-uncased's (the sweep and search data are tokenised with it),
// and moves base to the start's learning rate and warm-up when the start
// was pretrained and --lr was not given.
func trainStart(ctx context.Context, o finetune.Options, base *train.Config, epochs int, lrSet bool, stderr io.Writer) (*finetune.Result, error) {
	seed, trainer, lr := base.Seed, base.Trainer, base.LearningRate
	o.Tune = func(cfg *train.Config) {
		cfg.Epochs, cfg.Seed, cfg.Trainer = epochs, seed, trainer
		if lrSet {
			cfg.LearningRate = lr
		}
	}
	res, err := finetune.RunContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("training the starting model: %w", err)
	}
	for _, w := range res.StartWarnings {
		fmt.Fprintln(stderr, w)
	}
	if res.Pretrained && res.VocabSize != bertBaseVocabSize {
		return nil, fmt.Errorf("--pretrained %s has a vocabulary of %d tokens, but compress and search tokenise their data with bert-base-uncased's %d: use a model of the BERT-uncased family, or mase train", res.Model, res.VocabSize, bertBaseVocabSize)
	}
	if res.Pretrained && !lrSet {
		base.LearningRate, base.WarmupRatio = res.Config.LearningRate, res.Config.WarmupRatio
	}
	return res, nil
}

// bertBaseVocabSize is the size of bert-base-uncased's vocabulary.
const bertBaseVocabSize = 30522

// flagsSet names the flags given on the command line.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// trainingFlags are the training-step and batch-shape flags of the
// commands that train (train, compress, search).
type trainingFlags struct {
	trainer                  *string
	padMultiple, evalBatches *int
}

func addTrainingFlags(fs *flag.FlagSet) trainingFlags {
	return trainingFlags{
		trainer: fs.String("trainer", "", "training step: fused (forward and backward compiled, AdamW in Go: the Go backend's default) or graph "+
			"(the whole step one executable, parameters and optimizer state on the device: the default on XLA/GPU)"),
		padMultiple: fs.Int("pad-to-multiple-of", 0, "pad batch lengths up to a multiple of this (0: the backend's, 32 on the Go backend, 64 on XLA)"),
		evalBatches: fs.Int("eval-batch-size", 0, "evaluation batch size (0: the backend's, the training batch size on the Go backend, 64 on XLA)"),
	}
}

// apply sets the flags into a training config and fine-tuning options.
func (f trainingFlags) apply(cfg *train.Config, o *finetune.Options) error {
	if *f.padMultiple < 0 || *f.evalBatches < 0 {
		return fmt.Errorf("--pad-to-multiple-of %d, --eval-batch-size %d: want ≥ 0 (0: the backend's)", *f.padMultiple, *f.evalBatches)
	}
	cfg.Trainer = *f.trainer
	o.PadToMultipleOf, o.EvalBatchSize = *f.padMultiple, *f.evalBatches
	if cfg.Trainer != "" && cfg.Trainer != train.FusedTrainer && cfg.Trainer != train.GraphTrainer {
		return fmt.Errorf("--trainer %q: allowed fused, graph (or empty for the backend's choice)", cfg.Trainer)
	}
	return nil
}
