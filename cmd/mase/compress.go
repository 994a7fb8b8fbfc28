package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/scratch"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/mase/ui/progress"
)

const compressUsage = "width|sparsity [--checkpoint CKPT] [--dataset sst2|imdb|imdb-sample] [--limit N] [--eval-limit N] [--max-len L] " +
	"[--widths 4,8,...] [--sparsities 0.1,...] [--methods random,l1-norm] [--epochs E] [--start-epochs E] [--lr LR] [--seed S] [--plot FILE.svg] [--json]"

func init() {
	register(command{
		name:  "compress",
		usage: compressUsage,
		short: "run Lab 1's sweeps: fixed-point width (PTQ and QAT) or sparsity (random vs l1-norm, fine-tuned)",
		run:   runCompress,
		heavy: true,
	})
}

// runCompress is `mase compress width|sparsity`: every point starts from
// the same trained checkpoint (--checkpoint, or one trained first on the
// same data for --start-epochs epochs).
func runCompress(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("want a sweep, width or sparsity: usage: mase compress %s", compressUsage)
	}
	if args[0] != "width" && args[0] != "sparsity" {
		return fmt.Errorf("unknown sweep %q: want a sweep, width or sparsity: usage: mase compress %s", args[0], compressUsage)
	}
	sweep := args[0]
	fs := flag.NewFlagSet("compress "+sweep, flag.ContinueOnError)
	fs.SetOutput(stderr)
	ckpt := fs.String("checkpoint", "", "trained MaseGraph every point starts from (default: train one first)")
	unsealed := acceptUnsealedFlag(fs)
	dataset := fs.String("dataset", "sst2", "dataset: "+strings.Join(finetune.Datasets, ", "))
	limit := fs.Int("limit", 0, "class-balanced subset of N training examples (0: all)")
	evalLimit := fs.Int("eval-limit", 0, "class-balanced subset of N test examples (0: all)")
	maxLen := fs.Int("max-len", 64, "truncate sequences to this many tokens")
	widths := fs.String("widths", "4,6,8,12,16,24,32", "fixed-point widths (frac = width/2)")
	sparsities := fs.String("sparsities", "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", "sparsities in [0, 1]")
	methods := fs.String("methods", "random,l1-norm", "pruning methods (random, l1-norm)")
	epochs := fs.Int("epochs", 1, "epochs of QAT / fine-tuning per point")
	startEpochs := fs.Int("start-epochs", 1, "epochs of the starting model's training when no --checkpoint is given")
	lr := number(fs, "lr", finetune.FromScratch().LearningRate, learningRates, "peak learning rate (default: 1e-3 from a random initialisation, HF's 5e-5 from pretrained weights)")
	pretrainedFrom := pretrainedFlag(fs)
	seed := fs.Uint64("seed", 42, "seed")
	plotPath := fs.String("plot", "", "write the sweep's chart as SVG to this file")
	asJSON := fs.Bool("json", false, "print one JSON object per point, then a summary")
	shapes := addTrainingFlags(fs)
	dataDir := dataDirFlag(fs)
	if err := parseFlagsOnly(fs, args[1:]); err != nil {
		return err
	}
	defer useDataDir(*dataDir)()
	if *epochs < 1 || *startEpochs < 1 {
		return fmt.Errorf("--epochs and --start-epochs must be ≥ 1")
	}
	if err := checkOutputPath("--plot", *plotPath, ".svg"); err != nil {
		return err
	}
	ws, err := parseInts("--widths", *widths)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w < 2 || w > 32 {
			return fmt.Errorf("--widths: width %d out of range (allowed: 2..32)", w)
		}
	}
	sps, err := parseFloats("--sparsities", *sparsities)
	if err != nil {
		return err
	}
	ms := strings.Split(*methods, ",")
	for _, m := range ms {
		if m != passes.PruneRandom && m != passes.PruneL1 {
			return fmt.Errorf("--methods: %q is not a pruning method (allowed: random, l1-norm)", m)
		}
	}

	cfg := finetune.FromScratch()
	cfg.LearningRate, cfg.Seed = *lr, *seed
	o := finetune.Options{Model: "bert-tiny", Dataset: *dataset, Limit: *limit, EvalLimit: *evalLimit, MaxLen: *maxLen, Seed: *seed}
	if err := shapes.apply(&cfg, &o); err != nil {
		return err
	}
	if err := checkTrainMemory(trainSizes{pretrained: *pretrainedFrom, batch: cfg.BatchSize, maxLen: *maxLen, evalBatch: o.EvalBatchSize,
		limit: *limit, evalLimit: *evalLimit, padToMultipleOf: o.PadToMultipleOf, batchName: "batch size"}); err != nil {
		return err
	}
	progress := func(title string) train.Progress {
		if *asJSON {
			return nil
		}
		fmt.Fprintln(stderr, title)
		return &progress.Terminal{W: stderr}
	}
	set := flagsSet(fs)
	if *ckpt != "" && set["pretrained"] {
		return errStartTwice
	}
	if err := checkStartCheckpoint(*ckpt, *unsealed, stderr); err != nil {
		return err
	}
	ctx, release := interruptible() // until the data and the starting model are in
	defer release()
	start := *ckpt
	if start == "" {
		dir, err := scratch.Dir("", "gomase-compress-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		start = filepath.Join(dir, "start")
		so := o
		so.Out, so.Progress, so.Pretrained = start, progress("training the starting model"), *pretrainedFrom
		if !*asJSON {
			so.Hub.Progress = downloadProgress(stderr)
		}
		res, err := trainStart(ctx, so, &cfg, *startEpochs, set["lr"], stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "starting model: %s; %s accuracy %.4f after %d epoch(s)\n", res.Start, res.EvalSplit, res.Final.Accuracy, *startEpochs)
	}
	cfg.Epochs = *epochs
	s, err := compress.NewSessionContext(ctx, o, cfg)
	release()
	if err != nil {
		return err
	}
	s.Checkpoint, s.AcceptUnsealed, s.Progress, s.SweepProgress = start, *unsealed, progress, progress
	mg, err := s.Load()
	if err != nil {
		return err
	}
	base, err := s.Evaluate(mg)
	if err != nil {
		return err
	}
	emit := func(v any) {
		if *asJSON {
			js, _ := json.Marshal(v)
			fmt.Fprintln(stdout, string(js))
		}
	}
	var chart plot.Chart
	summary := map[string]any{"sweep": sweep, "dataset": *dataset, "train_examples": s.Train.Len(), "test_examples": s.Test.Len(),
		"baseline_accuracy": base.Accuracy}
	if !*asJSON {
		fmt.Fprintf(stdout, "baseline accuracy %.4f (%d test examples)\n", base.Accuracy, s.Test.Len())
	}
	switch sweep {
	case "width":
		points, err := s.WidthSweep(ws, func(p compress.WidthPoint) {
			emit(p)
			if !*asJSON {
				fmt.Fprintf(stdout, "width %2d (frac %2d): PTQ %.4f  QAT %.4f\n", p.Width, p.FracWidth, p.PTQ, p.QAT)
			}
		})
		if err != nil {
			return err
		}
		summary["points"] = points
		chart = compress.WidthChart(points, base.Accuracy)
	case "sparsity":
		points, err := s.SparsitySweep(sps, ms, func(p compress.SparsityPoint) {
			emit(p)
			if !*asJSON {
				fmt.Fprintf(stdout, "sparsity %.2f %-8s pruned %.4f  fine-tuned %.4f\n", p.Sparsity, p.Method, p.Pruned, p.FineTuned)
			}
		})
		if err != nil {
			return err
		}
		summary["points"] = points
		chart = compress.SparsityChart(points, base.Accuracy, true)
	}
	emit(summary)
	if *plotPath != "" {
		svg, err := plot.LineSVG(chart)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*plotPath, svg, 0o644); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	return nil
}

// parseInts reads a comma-separated list of integers.
func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer (want a comma-separated list such as 4,8,16)", flagName, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseFloats reads a comma-separated list of numbers in [0, 1].
func parseFloats(flagName, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !fractions.contains(v) {
			return nil, fmt.Errorf("%s: %q is not a number in [0, 1] (want a comma-separated list such as 0.1,0.5)", flagName, f)
		}
		out = append(out, v)
	}
	return out, nil
}
