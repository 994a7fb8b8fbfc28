package nas

import (
	"fmt"
	"time"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/checkpoint"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/lab/compress"
	"github.com/gomase/gomase/mase/passes"
	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/train"
)

// TracedInputs are the inputs trial models are traced with (the trainer
// needs the labels for its loss).
var TracedInputs = []string{"input_ids", "attention_mask", "labels"}

// Objective is the tutorial's objective: build the trial's model, train
// it, evaluate it and return the test accuracy. With Compression set it is
// Task 2's compression-aware objective: after training, the model goes
// through the CompressionPipeline and the accuracy after compression
// (after PostEpochs more epochs of training when PostEpochs > 0) is the
// value.
//
// It records user attributes on each trial: "parameters",
// "num_hidden_layers", "num_attention_heads", "hidden_size",
// "intermediate_size", "identities" (how many square Linears became
// Identity), "accuracy" (after training), and with compression
// "compressed_accuracy" and, with PostEpochs, "post_trained_accuracy".
type Objective struct {
	Space Space
	// Session holds the data, batching and optimiser settings (Epochs is
	// the training before compression; Verbose keeps the passes' log
	// lines); its Checkpoint is not used.
	Session *compress.Session
	// Seed initialises the trial models: trial n's model uses Seed + n,
	// so a study is reproducible and trials do not share initialisations.
	Seed uint64
	// Compression, when set, holds the CompressionPipeline's arguments by
	// pass name (quantize_transform_pass, prune_transform_pass).
	Compression map[string]any
	// PostEpochs is the training after compression (0: none).
	PostEpochs int
	// BestPath, when set, is where the model of the best trial so far is
	// exported (checkpoint.Export; MASE pickles study.best_trial's model).
	BestPath string
	// OnModel, when set, sees every trial's final graph before its value
	// is returned.
	OnModel func(t *search.Trial, mg *ir.MaseGraph)
}

// Tutorial5Compression is Tutorial 5's CompressionPipeline arguments for
// Objective.Compression: every Linear quantized to integer 8/4 (data,
// weight, bias), then L1-norm pruning at 0.5, local, of weights and
// activations (Lab 1's configs: compress.IntegerLinearConfig and
// compress.PruneConfig).
func Tutorial5Compression() map[string]any {
	return map[string]any{
		passes.QuantizeTransformPass: compress.IntegerLinearConfig(8, 4),
		passes.PruneTransformPass:    compress.PruneConfig(0.5, passes.PruneL1, 0),
	}
}

// Run evaluates one trial; it is a search.Objective.
func (o *Objective) Run(t *search.Trial) (float64, error) {
	if o.Session == nil {
		return 0, fmt.Errorf("nas: Objective.Session is nil")
	}
	start, compiled := time.Now(), o.Session.Compiles()
	m, arch, err := o.Space.Build(t, o.Seed+uint64(t.Number()))
	if err != nil {
		return 0, err
	}
	attrs := map[string]any{"parameters": arch.Parameters, "num_hidden_layers": arch.Config.NumHiddenLayers,
		"num_attention_heads": arch.Config.NumAttentionHeads, "hidden_size": arch.Config.HiddenSize,
		"intermediate_size": arch.Config.IntermediateSize, "identities": len(arch.Identities)}
	if err := setAttrs(t, attrs); err != nil {
		return 0, err
	}
	mg, err := mase.NewMaseGraph(m, TracedInputs)
	if err != nil {
		return 0, err
	}
	title := fmt.Sprintf("trial %d", t.Number())
	value, err := trainAndEvaluate(o.Session, t, mg, title, "accuracy")
	if err != nil {
		return 0, err
	}
	if o.Compression != nil {
		err := o.Session.Quietly(func() (err error) {
			mg, _, err = passes.CompressionPipeline().Run(mg, o.Compression)
			return err
		})
		if err != nil {
			return 0, err
		}
		m, err := o.Session.Evaluate(mg)
		if err != nil {
			return 0, err
		}
		value = m.Accuracy
		if err := t.SetUserAttr("compressed_accuracy", value); err != nil {
			return 0, err
		}
		if o.PostEpochs > 0 {
			post := *o.Session
			post.Config.Epochs = o.PostEpochs
			if value, err = trainAndEvaluate(&post, t, mg, title+", after compression", "post_trained_accuracy"); err != nil {
				return 0, err
			}
		}
	}
	if err := setAttrs(t, trialTimes(start, compiled, o.Session.Compiles())); err != nil {
		return 0, err
	}
	if o.OnModel != nil {
		o.OnModel(t, mg)
	}
	if o.BestPath != "" {
		if err := o.saveIfBest(t, mg, value); err != nil {
			return 0, err
		}
	}
	return value, nil
}

// trainAndEvaluate trains mg for the session's epochs, evaluates it and
// records the accuracy as attr.
func trainAndEvaluate(s *compress.Session, t *search.Trial, mg *ir.MaseGraph, title, attr string) (float64, error) {
	if s.Config.Epochs > 0 {
		if _, err := s.FineTune(mg, title); err != nil {
			return 0, err
		}
	}
	m, err := s.Evaluate(mg)
	if err != nil {
		return 0, err
	}
	return m.Accuracy, t.SetUserAttr(attr, m.Accuracy)
}

// saveIfBest exports mg to BestPath when value beats every completed
// trial of the study so far.
func (o *Objective) saveIfBest(t *search.Trial, mg *ir.MaseGraph, value float64) error {
	best, err := t.Study().BestTrial()
	if err == nil && !t.Study().Direction().Better(value, best.Value) {
		return nil
	}
	if err := checkpoint.Export(o.BestPath, mg, checkpoint.Spec{Model: "bert-tiny", Seed: o.Seed + uint64(t.Number())}); err != nil {
		return fmt.Errorf("nas: saving the best model: %w", err)
	}
	return t.SetUserAttr("saved_as_best", o.BestPath)
}

// trialTimes are a trial's wall seconds and the executables it compiled
// with their seconds (the rest of a trial is training and evaluation).
func trialTimes(start time.Time, before, after train.Compiles) map[string]any {
	return map[string]any{"seconds": time.Since(start).Seconds(), "compiles": after.Count - before.Count,
		"compile_seconds": after.Seconds - before.Seconds}
}

func setAttrs(t *search.Trial, attrs map[string]any) error {
	for k, v := range attrs {
		if err := t.SetUserAttr(k, v); err != nil {
			return err
		}
	}
	return nil
}
