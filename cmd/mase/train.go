package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/train"
	"github.com/gomase/gomase/mase/ui/progress"
)

func init() {
	register(command{
		name: "train",
		usage: "--model bert-tiny --dataset imdb|imdb-sample|sst2 [--epochs E] [--limit N] [--eval-limit N] [--max-len L] " +
			"[--lr LR] [--warmup RATIO] [--lora-rank R] [--lora-alpha A] [--freeze-embeddings] [--group-by-length] [--trainer fused|graph] " +
			"[--pad-to-multiple-of N] [--eval-batch-size N] [--out CKPT] [--seed S] [--json]",
		short: "fine-tune a model on a sentiment dataset and print the metrics (Lab 0 Tutorial 2)",
		run:   runTrain,
		heavy: true,
	})
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaults := finetune.FromScratch()
	model := fs.String("model", "bert-tiny", "model to fine-tune (bert-tiny)")
	dataset := fs.String("dataset", "imdb", "dataset: "+strings.Join(finetune.Datasets, ", "))
	epochs := fs.Int("epochs", 1, "training epochs")
	limit := fs.Int("limit", 0, "keep a class-balanced subset of N training examples (0: all)")
	evalLimit := fs.Int("eval-limit", 0, "keep a class-balanced subset of N evaluation examples (0: all)")
	maxLen := fs.Int("max-len", 512, "truncate sequences to this many tokens")
	lr := number(fs, "lr", defaults.LearningRate, learningRates, "peak learning rate (default: 1e-3 from a random initialisation, HF's 5e-5 from pretrained weights)")
	warmup := number(fs, "warmup", defaults.WarmupRatio, warmupRatios, "warm-up as a fraction of all steps (default: 0.1 from a random initialisation, HF's 0 from pretrained weights)")
	pretrainedFrom := pretrainedFlag(fs)
	batch := fs.Int("batch-size", defaults.BatchSize, "batch size")
	loraRank := fs.Int("lora-rank", 0, "insert LoRA adapters of this rank (0: full fine-tuning); fused after training")
	loraAlpha := number(fs, "lora-alpha", 0, loraAlphas, "LoRA alpha (default: the rank, so the scale α/r is 1)")
	freeze := fs.Bool("freeze-embeddings", false, "freeze bert.embeddings, as Tutorial 2 does")
	groupByLength := fs.Bool("group-by-length", false, "batch training examples of similar length together (HF's group_by_length): faster epochs on IMDb")
	out := fs.String("out", "", "export the trained MaseGraph to CKPT.safetensors and CKPT.json")
	seed := fs.Uint64("seed", 42, "seed of the initialisation, shuffling and dropout")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	quiet := fs.Bool("quiet", false, "no progress bar on stderr")
	shapes := addTrainingFlags(fs)
	dataDir := dataDirFlag(fs)
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	defer useDataDir(*dataDir)()
	if *maxLen < 2 {
		return fmt.Errorf("--max-len %d: want at least 2 ([CLS] and [SEP])", *maxLen)
	}
	if *limit < 0 || *evalLimit < 0 || *loraRank < 0 {
		return fmt.Errorf("--limit, --eval-limit and --lora-rank must be ≥ 0")
	}
	if *out != "" {
		if err := checkCheckpointOut("--out", *out); err != nil {
			return err
		}
	}
	set := flagsSet(fs)
	opts := finetune.Options{Model: *model, Dataset: *dataset, Limit: *limit, EvalLimit: *evalLimit, MaxLen: *maxLen,
		LoRARank: *loraRank, LoRAAlpha: *loraAlpha, FreezeEmbeddings: *freeze, GroupByLength: *groupByLength, Out: *out, Seed: *seed,
		Pretrained: *pretrainedFrom}
	var check train.Config
	if err := shapes.apply(&check, &opts); err != nil {
		return err
	}
	if err := checkTrainMemory(trainSizes{pretrained: *pretrainedFrom, batch: *batch, maxLen: *maxLen, evalBatch: opts.EvalBatchSize,
		limit: *limit, evalLimit: *evalLimit, loraRank: *loraRank, padToMultipleOf: opts.PadToMultipleOf, freezeEmbeddings: *freeze}); err != nil {
		return err
	}
	// The start (random or pretrained) picks the default learning rate and
	// warm-up; flags given on the command line override it.
	opts.Tune = func(cfg *train.Config) {
		cfg.Epochs, cfg.BatchSize, cfg.Trainer = *epochs, *batch, check.Trainer
		if set["lr"] {
			cfg.LearningRate = *lr
		}
		if set["warmup"] {
			cfg.WarmupRatio = *warmup
		}
	}
	if !*quiet {
		opts.Progress = &progress.Terminal{W: stderr}
		opts.Hub.Progress = downloadProgress(stderr)
	}
	ctx, release := interruptible()
	defer release()
	res, err := finetune.RunContext(ctx, opts)
	release()
	if err != nil {
		return err
	}
	for _, w := range res.StartWarnings {
		fmt.Fprintln(stderr, w)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "%s on %s: %d training examples, %d steps in %.1f s (%.1f samples/s; %s trainer, %d compiles in %.1f s)\n",
		res.Model, res.Dataset, res.TrainExamples, res.History.Steps, res.History.Seconds, res.SamplesPerSec,
		res.Trainer, res.Compiles.Training.Count, res.Compiles.Training.Seconds)
	for _, e := range res.Compiles.TrainingLog {
		fmt.Fprintf(stdout, "  compiled for %s in %.2f s\n", e.Shapes, e.Seconds)
	}
	fmt.Fprintf(stdout, "%s\n", res.Start)
	fmt.Fprintf(stdout, "trainable parameters: %d of %d\n", res.Trainable, res.Parameters)
	fmt.Fprintf(stdout, "%s accuracy: baseline %.4f → trained %.4f\n", res.EvalSplit, res.Baseline.Accuracy, res.Final.Accuracy)
	if res.Fused != nil {
		fmt.Fprintf(stdout, "after fusing LoRA: %.4f\n", res.Fused.Accuracy)
	}
	if res.Checkpoint != "" {
		fmt.Fprintf(stdout, "checkpoint: %s.safetensors, %s.json\n", res.Checkpoint, res.Checkpoint)
	}
	return nil
}
