package train

import (
	"cmp"
	"fmt"
	"iter"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Batch is one batch of model inputs by placeholder name (input_ids,
// attention_mask, labels); labels must be among them.
type Batch map[string]*tensors.Tensor

// Batches yields the batches of one pass over a split, or an error.
type Batches = iter.Seq2[Batch, error]

// Trainer trains a MaseGraph whose output is (loss, logits) — a model
// traced with labels, as MASE's hf_input_names=[..., "labels"].
//
// It runs one of two training steps (Config.Trainer), each a stepper that
// Step and Train drive: "fused" (fusedStep), a compiled forward and
// backward whose gradients AdamW applies in Go, one fused loop per
// parameter (the fastest on the Go backend, where the host is the device),
// or "graph" (graphStep), the whole step in one executable with parameters
// and optimizer state resident on the device (what a GPU needs). By
// default the choice follows the backend.
type Trainer struct {
	mg       *ir.MaseGraph
	cfg      Config
	kind     string // FusedTrainer or GraphTrainer
	step     stepper
	eval     *Evaluator
	compiled *compileTracker // the training executables, shared with step
}

// stepper is one training step implementation. Calls are serialised by the
// implementation.
type stepper interface {
	// run takes one optimizer step on b at learning rate lr.
	run(b Batch, lr float64) (stepValues, error)
	// startWindow begins a logging window; windowLoss returns the summed
	// loss of the steps run since.
	startWindow() error
	windowLoss() (float64, error)
	// close frees the step's executables and optimizer state.
	close()
}

// stepValues are one step's loss and gradient norm (before clipping):
// read on the host already (the fused step), or left on the device until
// read (the graph step: each read waits for the device).
type stepValues struct {
	loss, norm   float64
	lossT, normT *tensors.Tensor // the device values; nil when read
}

// onDevice reports whether reading the values waits for the device.
func (v *stepValues) onDevice() bool { return v.lossT != nil }

// read returns the loss and the gradient norm.
func (v *stepValues) read() (loss, norm float64, err error) {
	if !v.onDevice() {
		return v.loss, v.norm, nil
	}
	if loss, err = scalarOf(v.lossT); err == nil {
		norm, err = scalarOf(v.normT)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	return loss, norm, nil
}

// free releases the device values.
func (v *stepValues) free() { execute.Finalize(v.lossT, v.normT) }

// The training steps Config.Trainer names.
const (
	FusedTrainer = "fused"
	GraphTrainer = "graph"
)

// TrainerFor returns the training step a backend gets by default: the
// fused host step on the Go backend, the device-resident graph step on
// every other (XLA: GPUs).
func TrainerFor(be compute.Backend) string {
	if backend.IsGo(be) {
		return FusedTrainer
	}
	return GraphTrainer
}

// New prepares training of mg with cfg: it freezes the parameters under
// the Freeze prefixes (others keep their state: see SetFrozen, Unfreeze)
// and compiles the training step lazily on first use, one executable per
// batch shape. Close frees what it holds.
func New(mg *ir.MaseGraph, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	inputs, err := lossGraphInputs(mg)
	if err != nil {
		return nil, err
	}
	t := &Trainer{mg: mg, cfg: cfg, compiled: &compileTracker{}}
	if err := SetFrozen(mg.Model, cfg.Freeze); err != nil {
		return nil, err
	}
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	t.kind = cmp.Or(cfg.Trainer, TrainerFor(be))
	if err := mg.Model.Store.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		return nil, fmt.Errorf("train: seeding dropout: %w", err)
	}
	if t.kind == GraphTrainer {
		t.step, err = newGraphStep(be, mg, cfg, inputs, t.compiled)
	} else {
		t.step, err = newFusedStep(be, mg, cfg, inputs, t.compiled)
	}
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if t.eval, err = NewEvaluator(mg); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Kind returns the training step in use: FusedTrainer or GraphTrainer.
func (t *Trainer) Kind() string { return t.kind }

// Close frees the trainer's executables and the graph trainer's optimizer
// state. The model keeps its trained parameters.
func (t *Trainer) Close() {
	if t.step != nil {
		t.step.close()
	}
	if t.eval != nil {
		t.eval.Close()
	}
}

// Compiles returns the training executables compiled so far and their
// time, and the evaluation's.
func (t *Trainer) Compiles() (training, evaluation Compiles) {
	return t.compiled.compiles(), t.eval.Compiles()
}

// CompileLog lists the executables the trainer compiled for training and
// for evaluation, each with the input shapes that caused it and its
// seconds (the first 1000 of each; Compiles keeps counting).
func (t *Trainer) CompileLog() (training, evaluation []CompileEvent) {
	if t.eval == nil {
		return t.compiled.events(), nil
	}
	return t.compiled.events(), t.eval.CompileLog()
}

// SetFrozen freezes (marks not trainable) every parameter of m whose
// dotted name starts with one of the module prefixes. Other parameters keep
// their state. An unknown prefix is an error listing the top-level modules.
func SetFrozen(m *nn.Model, prefixes []string) error {
	return setTrainable(m, prefixes, false)
}

// Unfreeze makes the parameters under the prefixes trainable again, except
// those their module declares frozen (ParamSpec.Frozen: LoRA's base weight).
func Unfreeze(m *nn.Model, prefixes []string) error {
	return setTrainable(m, prefixes, true)
}

func setTrainable(m *nn.Model, prefixes []string, trainable bool) error {
	for _, p := range prefixes {
		if _, ok := m.Module(p); !ok {
			var top []string
			for _, ch := range m.Root.Children() {
				top = append(top, ch.Name)
			}
			return fmt.Errorf("freeze: the model has no module %q (top-level modules: %s)", p, strings.Join(top, ", "))
		}
	}
	for _, par := range m.Parameters() {
		for _, p := range prefixes {
			if par.Name == p || strings.HasPrefix(par.Name, p+".") {
				par.Variable.SetTrainable(trainable && !par.Frozen)
			}
		}
	}
	return nil
}

// TrainableParameters counts the scalar parameters that will be trained.
func TrainableParameters(m *nn.Model) int {
	n := 0
	for _, p := range m.Parameters() {
		if p.Variable.Trainable {
			n += p.Variable.Shape().Size()
		}
	}
	return n
}

// Step runs one optimizer step on a batch at learning rate lr and returns
// the batch loss (before the update) and the gradient norm (before
// clipping), read back from the device. Concurrent calls run one after
// the other.
func (t *Trainer) Step(b Batch, lr float64) (loss, gradNorm float64, err error) {
	v, err := t.step.run(b, lr)
	if err != nil {
		return 0, 0, err
	}
	defer v.free()
	return v.read()
}

// scalarOf reads a scalar float32 tensor.
func scalarOf(x *tensors.Tensor) (float64, error) {
	f, err := tensors.CopyFlatData[float32](x)
	if err != nil {
		return 0, err
	}
	if len(f) != 1 {
		return 0, fmt.Errorf("want a scalar, got %d values", len(f))
	}
	return float64(f[0]), nil
}

// Metrics are the results of an evaluation.
type Metrics struct {
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	Examples int     `json:"examples"`
}

// Evaluate runs the graph in eval mode over every batch and returns the
// accuracy (argmax of the logits against the labels, as MASE's
// evaluate_metric "accuracy") and the mean loss (see Evaluator).
func (t *Trainer) Evaluate(batches Batches) (Metrics, error) {
	return t.eval.Evaluate(batches)
}

// examplesIn counts a batch's examples: its labels other than
// nn.IgnoreIndex (a padded batch's padding rows).
func examplesIn(b Batch) (int, error) {
	l, ok := b["labels"]
	if !ok {
		return 0, fmt.Errorf("train: batch has no labels")
	}
	labels, err := tensors.CopyFlatData[int32](l)
	if err != nil {
		return 0, fmt.Errorf("train: labels: %w", err)
	}
	n := 0
	for _, y := range labels {
		if y != nn.IgnoreIndex {
			n++
		}
	}
	return n, nil
}
