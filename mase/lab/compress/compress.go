// Package compress runs Lab 1's experiments on a trained MaseGraph:
// post-training quantization (PTQ), quantization-aware training (QAT),
// pruning with fine-tuning, and the sweeps of Tasks 1 and 2, every point
// starting from the same checkpoint. The notebooks and `mase compress`
// use it.
package compress

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/data"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/finetune"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/tokenizer"
	"github.com/gomase/gomase/mase/train"
)

// Session is what every experiment of a sweep shares.
type Session struct {
	// Checkpoint is the base path of the trained MaseGraph every
	// experiment starts from (checkpoint.Import), e.g. Tutorial 2's
	// ~/tutorial_2_lora; its graph must output (loss, logits).
	Checkpoint string
	// AcceptUnsealed imports a Checkpoint written before checksums
	// (checkpoint.ImportOptions.AcceptUnsealed), which cannot be verified.
	AcceptUnsealed bool
	// Train and Test are the pretokenised splits.
	Train, Test *data.Pretokenized
	// Batch sets batch size, truncation, padding and the shuffling seed.
	Batch data.BatchOptions
	// EvalBatchSize is the evaluation batch size (0: the backend's,
	// train.ShapesFor, else Batch.BatchSize).
	EvalBatchSize int
	// Config is the optimiser setting of QAT and of fine-tuning after
	// pruning (Epochs included).
	Config train.Config
	// Progress, when set, gives the progress reporter of each single
	// training run (FineTune, QAT, titled by the experiment).
	Progress func(title string) train.Progress
	// SweepProgress, when set, is used instead for the training runs
	// inside sweeps (a sweep has many; e.g. a text-only reporter).
	SweepProgress func(title string) train.Progress
	// Verbose keeps the passes' per-module log lines inside sweeps (they
	// are silenced by default: 14 lines per point).
	Verbose bool

	totals *compileTotals // shared by copies of the session
}

// compileTotals sums the executables a session's runs compiled.
type compileTotals struct {
	mu sync.Mutex
	c  train.Compiles
}

// tally adds c to the session's totals.
func (s *Session) tally(c train.Compiles) {
	t := s.compileTotals()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.c = t.c.Add(c)
}

// compileTotals returns the session's totals, created on first use.
func (s *Session) compileTotals() *compileTotals {
	if s.totals == nil {
		s.totals = &compileTotals{}
	}
	return s.totals
}

// Compiles returns the executables compiled so far by the session's
// training runs and evaluations, with their compile seconds (the search
// objectives report the difference per trial).
// Copies of the session made after the first call share its totals.
func (s *Session) Compiles() train.Compiles {
	t := s.compileTotals()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.c
}

// NewSession loads o's training and evaluation splits
// (finetune.LoadSplits: dataset, limits, seed), tokenises them with
// bert-base-uncased and returns a session that trains with cfg, batched
// as the trainer batches: cfg.BatchSize, truncation to o.MaxLen (0:
// tokenizer.ModelMaxLength), padding as finetune.Batching says, shuffled
// with o.Seed. Set Checkpoint and the progress reporters on the
// result as needed.
func NewSession(o finetune.Options, cfg train.Config) (*Session, error) {
	return NewSessionContext(context.Background(), o, cfg)
}

// NewSessionContext is NewSession with a context for the downloads (the
// dataset, the vocabulary).
func NewSessionContext(ctx context.Context, o finetune.Options, cfg train.Config) (*Session, error) {
	trainSplit, testSplit, err := finetune.LoadSplitsContext(ctx, o)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.BertBaseUncasedContext(ctx)
	if err != nil {
		return nil, err
	}
	maxLen := o.MaxLen
	if maxLen == 0 {
		maxLen = tokenizer.ModelMaxLength
	}
	o.MaxLen = maxLen
	trainOpts, evalOpts, err := finetune.Batching(o, cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	trainOpts.Shuffle = false // fineTune shuffles
	return &Session{Train: data.Pretokenize(trainSplit.Examples, tok), Test: data.Pretokenize(testSplit.Examples, tok),
		Batch: trainOpts, EvalBatchSize: evalOpts.BatchSize, Config: cfg}, nil
}

// Load imports a fresh copy of the checkpoint.
func (s *Session) Load() (*ir.MaseGraph, error) {
	if s.Checkpoint == "" {
		return nil, fmt.Errorf("compress: Session.Checkpoint is empty (the trained MaseGraph every experiment starts from)")
	}
	mg, _, err := checkpoint.ImportWith(s.Checkpoint, checkpoint.ImportOptions{AcceptUnsealed: s.AcceptUnsealed})
	return mg, err
}

// evalBatches are the test batches: no shuffle, bucketed by length.
func (s *Session) evalBatches() train.Batches {
	o := s.Batch
	o.Shuffle, o.BucketByLength = false, true
	shapes, _ := train.DefaultShapes() // a backend error surfaces when evaluating
	o.BatchSize = cmp.Or(s.EvalBatchSize, shapes.EvalBatchSize, o.BatchSize)
	return finetune.EpochBatches(s.Test, o)(0)
}

// Evaluate returns the test metrics of mg in eval mode.
func (s *Session) Evaluate(mg *ir.MaseGraph) (train.Metrics, error) {
	if s.Test == nil {
		return train.Metrics{}, fmt.Errorf("compress: Session.Test is nil")
	}
	if err := finetune.CheckTokens(mg.Model, s.Batch.MaxLength, s.Test); err != nil {
		return train.Metrics{}, fmt.Errorf("compress: %w", err)
	}
	e, err := train.NewEvaluator(mg)
	if err != nil {
		return train.Metrics{}, err
	}
	defer e.Close()
	m, err := e.Evaluate(s.evalBatches())
	s.tally(e.Compiles())
	return m, err
}

// FineTune trains mg for Config.Epochs over the training split and
// returns the history.
func (s *Session) FineTune(mg *ir.MaseGraph, title string) (*train.History, error) {
	return s.fineTune(mg, title, s.Progress)
}

// fineTune is FineTune with the given progress reporter maker.
func (s *Session) fineTune(mg *ir.MaseGraph, title string, makeProgress func(string) train.Progress) (*train.History, error) {
	if s.Train == nil {
		return nil, fmt.Errorf("compress: Session.Train is nil")
	}
	if err := finetune.CheckTokens(mg.Model, s.Batch.MaxLength, s.Train); err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	tr, err := train.New(mg, s.Config)
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	o := s.Batch
	o.Shuffle = true
	steps := data.NumBatches(s.Train.Len(), o.BatchSize, o.DropLast)
	var progress train.Progress
	if makeProgress != nil {
		progress = makeProgress(title)
	}
	h, err := tr.Train(finetune.EpochBatches(s.Train, o), steps, progress)
	training, _ := tr.Compiles()
	s.tally(training)
	return h, err
}

// Quietly runs f with the passes' per-module log lines silenced unless
// Verbose: the sweeps here and the search objectives of packages nas and
// mixedprecision run their passes through it. It swaps the package-level
// passes.Logger, so run one at a time (or set Verbose) when several
// goroutines share the passes.
func (s *Session) Quietly(f func() error) error {
	if s.Verbose {
		return f()
	}
	saved := passes.Logger
	passes.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	defer func() { passes.Logger = saved }()
	return f()
}
