// Package train fine-tunes and evaluates a MaseGraph, as HuggingFace's
// Trainer does for the labs (chop.tools.get_trainer): AdamW, a linear
// learning-rate schedule, gradient-norm clipping, batches of 8, accuracy
// over the evaluation split.
//
// Two training steps do the same arithmetic (Trainer): the fused step
// compiles the train-mode forward and the gradients, then clips and runs
// AdamW in Go, one fused loop per parameter (adamw.go), with embedding
// tables' gradients kept to the looked-up rows — the fastest on the Go
// backend; the graph step (graphstep.go) puts forward, backward, clipping
// and AdamW in one executable with parameters and optimizer state left on
// the device — what a GPU needs. The Evaluator computes the metrics on the
// device; ShapesFor says how each backend wants its batches padded.
package train

import (
	"fmt"
	"strings"

	"github.com/gomase/gomase/mase/limits"
)

// Schedule names a learning-rate schedule.
type Schedule string

// The schedules HF's Trainer offers that the labs use.
const (
	// Linear warms up linearly over WarmupSteps, then decays linearly to 0
	// at the last step (HF's default, get_linear_schedule_with_warmup).
	Linear Schedule = "linear"
	// Constant keeps the learning rate fixed after the warm-up.
	Constant Schedule = "constant"
)

// Config holds the training hyperparameters. DefaultConfig gives HF's
// TrainingArguments defaults, as the labs use them.
type Config struct {
	LearningRate float64  `json:"learning_rate"`
	Beta1        float64  `json:"adam_beta1"`
	Beta2        float64  `json:"adam_beta2"`
	Epsilon      float64  `json:"adam_epsilon"`
	WeightDecay  float64  `json:"weight_decay"`
	Schedule     Schedule `json:"lr_scheduler_type"`
	// WarmupSteps is the number of warm-up steps (HF: warmup_steps);
	// WarmupRatio, used when WarmupSteps is 0, is a fraction of all steps.
	WarmupSteps int     `json:"warmup_steps"`
	WarmupRatio float64 `json:"warmup_ratio"`
	// MaxGradNorm clips the global gradient norm (0 disables clipping).
	MaxGradNorm float64 `json:"max_grad_norm"`
	Epochs      int     `json:"num_train_epochs"`
	BatchSize   int     `json:"per_device_train_batch_size"`
	// LogEvery logs the mean training loss every so many steps.
	LogEvery int    `json:"logging_steps"`
	Seed     uint64 `json:"seed"`
	// Freeze lists module-path prefixes whose parameters are not trained
	// (e.g. "bert.embeddings").
	Freeze []string `json:"freeze,omitempty"`
	// Trainer forces the training step: FusedTrainer ("fused": forward and
	// backward compiled, AdamW in Go) or GraphTrainer ("graph": the whole
	// step one executable, parameters and optimizer state on the device).
	// Empty: the backend's (TrainerFor).
	Trainer string `json:"trainer,omitempty"`
}

// DefaultConfig returns HF Trainer's defaults: AdamW lr 5e-5, betas
// (0.9, 0.999), eps 1e-8, no weight decay, linear decay without warm-up,
// max_grad_norm 1.0, batch 8, 1 epoch, logging every 500 steps, seed 42.
func DefaultConfig() Config {
	return Config{LearningRate: 5e-5, Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, Schedule: Linear,
		MaxGradNorm: 1.0, Epochs: 1, BatchSize: 8, LogEvery: 500, Seed: 42}
}

// Validate names the first bad setting and what is allowed.
func (c Config) Validate() error {
	switch {
	case !(c.LearningRate > 0):
		return fmt.Errorf("learning_rate must be positive, got %v", c.LearningRate)
	case c.Beta1 < 0 || c.Beta1 >= 1 || c.Beta2 < 0 || c.Beta2 >= 1:
		return fmt.Errorf("adam betas must be in [0, 1), got (%v, %v)", c.Beta1, c.Beta2)
	case !(c.Epsilon > 0):
		return fmt.Errorf("adam_epsilon must be positive, got %v", c.Epsilon)
	case c.WeightDecay < 0:
		return fmt.Errorf("weight_decay must be ≥ 0, got %v", c.WeightDecay)
	case c.Schedule != Linear && c.Schedule != Constant:
		return fmt.Errorf("unknown lr_scheduler_type %q (allowed: linear, constant)", c.Schedule)
	case c.WarmupSteps < 0 || c.WarmupRatio < 0 || c.WarmupRatio >= 1:
		return fmt.Errorf("warm-up must be ≥ 0 steps and a ratio in [0, 1), got %d steps, ratio %v", c.WarmupSteps, c.WarmupRatio)
	case c.MaxGradNorm < 0:
		return fmt.Errorf("max_grad_norm must be ≥ 0 (0 disables clipping), got %v", c.MaxGradNorm)
	case limits.Epochs.Check(c.Epochs) != nil:
		return limits.Epochs.Check(c.Epochs)
	case limits.BatchSize.Check(c.BatchSize) != nil:
		return limits.BatchSize.Check(c.BatchSize)
	case c.LogEvery < 0:
		return fmt.Errorf("logging_steps must be ≥ 0, got %d", c.LogEvery)
	}
	if c.Trainer != "" && c.Trainer != FusedTrainer && c.Trainer != GraphTrainer {
		return fmt.Errorf("unknown trainer %q (allowed: fused, graph, or empty for the backend's choice)", c.Trainer)
	}
	for _, p := range c.Freeze {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("freeze: empty module prefix")
		}
	}
	return nil
}

// warmup returns the number of warm-up steps for a run of total steps.
func (c Config) warmup(total int) int {
	if c.WarmupSteps > 0 {
		return c.WarmupSteps
	}
	return int(c.WarmupRatio*float64(total) + 0.999999) // HF rounds the ratio up
}

// LearningRateAt returns the learning rate of optimizer step `step`
// (0-based) in a run of `total` steps, as HF's schedulers compute it.
func (c Config) LearningRateAt(step, total int) float64 {
	w := c.warmup(total)
	if step < w {
		return c.LearningRate * float64(step) / float64(max(1, w))
	}
	if c.Schedule == Constant {
		return c.LearningRate
	}
	return c.LearningRate * max(0, float64(total-step)) / float64(max(1, total-w))
}
