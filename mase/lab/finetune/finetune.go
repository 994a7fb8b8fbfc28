// Package finetune runs Lab 0 Tutorial 2's experiment end to end: load a
// sentiment dataset, tokenise it, build and trace bert-tiny with
// input_ids, attention_mask and labels, evaluate the untrained baseline,
// fine-tune (fully, or with LoRA adapters that are fused afterwards),
// evaluate again and save a checkpoint. The `mase train` command and the
// notebooks use it.
package finetune

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/hub"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/pretrained"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
)

// Datasets lists the names Options.Dataset accepts.
var Datasets = []string{"imdb", "imdb-sample", "sst2"}

// Options configure Run. Zero values take the defaults noted.
type Options struct {
	Model   string // "bert-tiny" (default)
	Dataset string // imdb, imdb-sample or sst2 (default imdb)
	// Limit keeps a class-balanced subset of this many training examples
	// (0: all); EvalLimit does the same for the evaluation split.
	Limit, EvalLimit int
	MaxLen           int // truncation length (default 512, MASE's)
	// Train holds the optimiser settings (default: FromScratch(), or HF's
	// train.DefaultConfig() with pretrained weights); Tune, when set,
	// adjusts that default instead (the CLI's flags).
	Train *train.Config
	Tune  func(*train.Config)
	// LoRARank > 0 inserts LoRA adapters of that rank (alpha LoRAAlpha,
	// default = rank) before training and fuses them afterwards.
	LoRARank  int
	LoRAAlpha float64
	// FreezeEmbeddings freezes bert.embeddings, as Tutorial 2 does.
	FreezeEmbeddings bool
	// GroupByLength batches training examples of similar length together
	// (HF's group_by_length): less padding, so a faster epoch on long,
	// varied texts such as IMDb; batches still come in a seeded random order.
	GroupByLength bool
	// PadToMultipleOf rounds batch lengths up to a multiple of this and
	// EvalBatchSize sets the evaluation batch size; 0 takes the backend's
	// (train.ShapesFor: 32 and the training batch size on the Go backend,
	// 64 and 64 with fixed-size batches on XLA).
	PadToMultipleOf, EvalBatchSize int
	// Out, when set, is where the trained MaseGraph is exported
	// (Out.safetensors + Out.json).
	Out      string
	Seed     uint64
	Progress train.Progress
	// Pretrained is where the model starts (pretrained.Start): "" or "off"
	// for the seeded initialisation, "auto" for the labs' pretrained
	// bert-tiny when it can be had, or a HuggingFace repository id or
	// folder. With pretrained weights the default learning rate is HF's
	// (train.DefaultConfig) rather than FromScratch's.
	Pretrained string
	// Hub says where pretrained files come from (folder, cache, download).
	Hub hub.Options
}

// FromScratch is the optimiser setting gomase uses when no pretrained
// weights exist (always, offline): HF's AdamW and linear decay, but a
// learning rate of 1e-3 with 10% warm-up instead of 5e-5 without, since
// 5e-5 barely moves a randomly initialised BERT in one epoch.
func FromScratch() train.Config {
	c := train.DefaultConfig()
	c.LearningRate, c.WarmupRatio = 1e-3, 0.1
	return c
}

// Result is what Run measured.
type Result struct {
	Trainer  string      `json:"trainer"`
	Compiles RunCompiles `json:"compiles"`
	Model    string      `json:"model"`
	// Start says where the model started: a seeded initialisation or a
	// pretrained checkpoint (and why, for an "auto" fallback).
	Start string `json:"start"`
	// Pretrained is whether the model started from pretrained weights, and
	// VocabSize the size of its vocabulary (0 for the seeded bert-tiny).
	Pretrained bool `json:"pretrained"`
	VocabSize  int  `json:"vocab_size,omitempty"`
	// StartWarnings are transformers' warnings about the pretrained load
	// (weights not used, a newly initialised head).
	StartWarnings []string       `json:"start_warnings,omitempty"`
	Dataset       string         `json:"dataset"`
	TrainExamples int            `json:"train_examples"`
	EvalExamples  int            `json:"eval_examples"`
	EvalSplit     string         `json:"eval_split"`
	Config        train.Config   `json:"config"`
	LoRARank      int            `json:"lora_rank,omitempty"`
	Trainable     int            `json:"trainable_parameters"`
	Parameters    int            `json:"parameters"`
	Baseline      train.Metrics  `json:"baseline"`
	Final         train.Metrics  `json:"final"`
	Fused         *train.Metrics `json:"fused,omitempty"`
	History       *train.History `json:"history"`
	// SamplesPerSec is training examples per second of training, the
	// compiles left out (History.StepSeconds).
	SamplesPerSec float64 `json:"train_samples_per_s"`
	Checkpoint    string  `json:"checkpoint,omitempty"`
	Seconds       float64 `json:"seconds"`
}

// RunCompiles are the executables a run compiled for training and for
// evaluation, each with its compile seconds, and the logs of them: the
// input shapes that caused each compile.
type RunCompiles struct {
	Training      train.Compiles       `json:"training"`
	Evaluation    train.Compiles       `json:"evaluation"`
	TrainingLog   []train.CompileEvent `json:"training_log"`
	EvaluationLog []train.CompileEvent `json:"evaluation_log"`
}

// Batching returns the batch options of o's training and evaluation
// batches of batchSize examples on the default backend: truncation to
// o.MaxLen (0: 512), length buckets and batch padding as train.ShapesFor
// says unless o overrides them; training batches are shuffled with o.Seed
// (and grouped by length with o.GroupByLength), evaluation batches are
// always grouped by length, unshuffled.
func Batching(o Options, batchSize int) (trainOpts, evalOpts data.BatchOptions, err error) {
	shapes, err := train.DefaultShapes()
	if err != nil {
		return trainOpts, evalOpts, err
	}
	return BatchingFor(o, batchSize, shapes)
}

// BatchingFor is Batching with the given backend shapes.
func BatchingFor(o Options, batchSize int, shapes train.Shapes) (trainOpts, evalOpts data.BatchOptions, err error) {
	maxLen := cmp.Or(o.MaxLen, tokenizer.ModelMaxLength)
	multiple := cmp.Or(o.PadToMultipleOf, shapes.PadToMultipleOf)
	trainOpts = data.BatchOptions{BatchSize: batchSize, MaxLength: maxLen, Shuffle: true, Seed: o.Seed,
		PadToMultipleOf: multiple, BucketByLength: o.GroupByLength, PadBatch: shapes.FixedBatch}
	// Evaluation batches are always length-bucketed: accuracy does not
	// depend on the order, and sorted batches carry far less padding.
	evalOpts = data.BatchOptions{BatchSize: cmp.Or(o.EvalBatchSize, shapes.EvalBatchSize, batchSize), MaxLength: maxLen,
		PadToMultipleOf: multiple, BucketByLength: true, PadBatch: shapes.FixedBatch}
	if err := trainOpts.Validate(); err != nil {
		return trainOpts, evalOpts, err
	}
	return trainOpts, evalOpts, evalOpts.Validate()
}

// LoadSplits loads the dataset's training split and its evaluation split
// (IMDb: test, as MASE evaluates on the test set; SST-2: test, which is
// GLUE's dev set), limited as the options say.
func LoadSplits(o Options) (trainSplit, evalSplit *data.Split, err error) {
	return LoadSplitsContext(context.Background(), o)
}

// LoadSplitsContext is LoadSplits with a context for a dataset download.
func LoadSplitsContext(ctx context.Context, o Options) (trainSplit, evalSplit *data.Split, err error) {
	var ds *data.Dataset
	switch o.Dataset {
	case "", "imdb":
		ds, err = data.LoadIMDbContext(ctx, data.IMDbOptions{Seed: o.Seed})
	case "imdb-sample":
		ds, err = data.LoadIMDbSample(data.IMDbOptions{Seed: o.Seed})
	case "sst2":
		ds, err = data.LoadSST2Context(ctx, data.SST2Options{Seed: o.Seed})
	default:
		return nil, nil, fmt.Errorf("unknown dataset %q (allowed: imdb, imdb-sample, sst2)", o.Dataset)
	}
	if err != nil {
		return nil, nil, err
	}
	if trainSplit, err = ds.Split("train"); err != nil {
		return nil, nil, err
	}
	if evalSplit, err = ds.Split("test"); err != nil {
		return nil, nil, err
	}
	if o.Limit > 0 && o.Limit < trainSplit.Len() {
		if trainSplit, err = trainSplit.Limit(o.Limit, o.Seed); err != nil {
			return nil, nil, err
		}
	}
	if o.EvalLimit > 0 && o.EvalLimit < evalSplit.Len() {
		if evalSplit, err = evalSplit.Limit(o.EvalLimit, o.Seed); err != nil {
			return nil, nil, err
		}
	}
	return trainSplit, evalSplit, nil
}

// EpochBatches turns pretokenised examples into the trainer's batches:
// epoch e is shuffled with seed+e (eval batches: shuffle off).
func EpochBatches(p *data.Pretokenized, opts data.BatchOptions) func(e int) train.Batches {
	return func(e int) train.Batches {
		o := opts
		o.Seed += uint64(e)
		return func(yield func(train.Batch, error) bool) {
			for b, err := range p.Batches(o) {
				var tb train.Batch
				if b != nil {
					tb = b.Tensors()
				}
				if !yield(tb, err) || err != nil {
					return
				}
			}
		}
	}
}

// Run performs the whole experiment.
func Run(o Options) (*Result, error) {
	return RunContext(context.Background(), o)
}

// RunContext is Run with a context for the downloads (the pretrained
// start, the dataset, the vocabulary): cancelling it stops them, removes
// what they had written and ends the run before training. Training itself
// does not watch ctx.
func RunContext(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Model == "" {
		o.Model = "bert-tiny"
	}
	if o.Model != "bert-tiny" {
		return nil, fmt.Errorf("fine-tuning supports model bert-tiny (got %q)", o.Model)
	}
	if o.MaxLen == 0 {
		o.MaxLen = tokenizer.ModelMaxLength
	}
	from, startNote, err := pretrained.StartContext(ctx, o.Pretrained, pretrained.Options{Hub: o.Hub, NumLabels: 2, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	cfg := FromScratch()
	if from != nil {
		cfg = train.DefaultConfig()
	}
	if o.Train != nil {
		cfg = *o.Train
	}
	if o.Tune != nil {
		o.Tune(&cfg)
	}
	cfg.Seed = o.Seed
	if o.FreezeEmbeddings {
		cfg.Freeze = append(cfg.Freeze, "bert.embeddings")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var model *nn.Model
	var tok *tokenizer.Tokenizer
	if from != nil {
		model, tok = from.Model, from.Tokenizer
	} else if model, err = models.New(o.Model, o.Seed); err != nil {
		return nil, err
	}
	if err := CheckTokens(model, o.MaxLen); err != nil { // the length now, the ids once tokenised
		return nil, err
	}
	trainSplit, evalSplit, err := LoadSplitsContext(ctx, o)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		if tok, err = tokenizer.BertBaseUncasedContext(ctx); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("stopped before training: %w", context.Cause(ctx))
	}
	mg, err := mase.NewMaseGraph(model, []string{"input_ids", "attention_mask", "labels"})
	if err != nil {
		return nil, err
	}
	if o.LoRARank > 0 {
		alpha := o.LoRAAlpha
		if alpha == 0 {
			alpha = float64(o.LoRARank)
		}
		if mg, _, err = passes.InsertLoRA(mg, passes.LoRAArgs{Rank: o.LoRARank, Alpha: alpha, Seed: o.Seed}); err != nil {
			return nil, err
		}
	}
	tr, err := train.New(mg, cfg)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	res := &Result{Trainer: tr.Kind(), Model: o.Model, Start: startNote, Dataset: o.Dataset, TrainExamples: trainSplit.Len(), EvalExamples: evalSplit.Len(),
		EvalSplit: evalSplit.Name, Config: cfg, LoRARank: o.LoRARank}
	if res.Dataset == "" {
		res.Dataset = "imdb"
	}
	if from != nil {
		res.Model, res.StartWarnings, res.Pretrained, res.VocabSize = from.ID, from.Warnings(), true, from.Config.VocabSize
	}
	rows, _ := passes.ReportTrainableParameters(mg)
	res.Trainable, res.Parameters = rows[0].Trainable, rows[0].Total

	trainData := data.Pretokenize(trainSplit.Examples, tok)
	evalData := data.Pretokenize(evalSplit.Examples, tok)
	if err := CheckTokens(model, o.MaxLen, trainData, evalData); err != nil {
		return nil, err
	}
	trainOpts, evalOpts, err := Batching(o, cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	if res.Baseline, err = tr.Evaluate(EpochBatches(evalData, evalOpts)(0)); err != nil {
		return nil, err
	}
	steps := data.NumBatches(trainData.Len(), cfg.BatchSize, false)
	if res.History, err = tr.Train(EpochBatches(trainData, trainOpts), steps, o.Progress); err != nil {
		return nil, err
	}
	res.SamplesPerSec = float64(res.History.Examples) / max(res.History.StepSeconds(), 1e-9)
	if res.Final, err = tr.Evaluate(EpochBatches(evalData, evalOpts)(0)); err != nil {
		return nil, err
	}
	if o.LoRARank > 0 {
		if mg, _, err = passes.FuseLoRA(mg); err != nil {
			return nil, err
		}
		m, err := train.EvaluateGraph(mg, EpochBatches(evalData, evalOpts)(0))
		if err != nil {
			return nil, err
		}
		res.Fused = &m
	}
	res.Compiles.Training, res.Compiles.Evaluation = tr.Compiles()
	res.Compiles.TrainingLog, res.Compiles.EvaluationLog = tr.CompileLog()
	if o.Out != "" {
		if err := checkpoint.Export(o.Out, mg, checkpoint.Spec{Model: o.Model, Seed: o.Seed}); err != nil {
			return nil, err
		}
		res.Checkpoint = o.Out
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}
