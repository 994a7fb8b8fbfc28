package train

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

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
// It runs one of two training steps (Config.Trainer): "fused", a compiled
// forward and backward whose gradients AdamW applies in Go, one fused loop
// per parameter (the fastest on the Go backend, where the host is the
// device), or "graph", the whole step in one executable with parameters
// and optimizer state resident on the device (graphStep: what a GPU
// needs). By default the choice follows the backend.
type Trainer struct {
	mg     *ir.MaseGraph
	cfg    Config
	kind   string // FusedTrainer or GraphTrainer
	inputs []string
	step   *model.Exec // the fused trainer's forward and backward
	graph  *graphStep  // the graph trainer's step
	eval   *Evaluator

	compiled compileTracker // the training executables

	// stepOuts describes the outputs of each compiled step graph (one
	// per set of input shapes).
	stepOuts sync.Map // *graph.Graph → *stepOutputs
	stepMu   sync.Mutex
	opt      adamW // guarded by stepMu
}

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
	t := &Trainer{mg: mg, cfg: cfg, inputs: inputs}
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
		t.graph, err = newGraphStep(be, mg, cfg, inputs)
	} else {
		t.step, err = model.NewExec(be, mg.Model.Store, t.stepGraph)
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
		t.step.Finalize()
	}
	if t.graph != nil {
		t.graph.exec.Finalize()
		_ = t.mg.Model.Store.DeleteVariablesInScope(optimizerScope)
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

// stepGraph builds the graph of one training step: inputs are the batch
// tensors in placeholder order; outputs are the loss and the gradients of
// the trainable parameters the loss depends on, as recorded in stepOuts
// (see stepOutputs). Clipping and AdamW run in Go on the gradients (see adamW):
// on the Go backend each elementwise graph op is a separate pass over
// memory, and the optimizer's dozen passes over the 3.9M-entry embedding
// table cost more than the whole update done in one loop.
func (t *Trainer) stepGraph(scope *model.Scope, ins []*graph.Node) []*graph.Node {
	g := ins[0].Graph()
	byName := map[string]*graph.Node{}
	for i, name := range t.inputs {
		byName[name] = ins[i]
	}
	vals, err := execute.Build(g, scope, t.mg, byName, execute.Mode{Training: true})
	if err != nil {
		panic(err)
	}
	loss := vals[t.mg.Graph.OutputNode()].([]any)[0].(*graph.Node)
	var params []*model.Variable
	for v := range scope.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			if v.DType() != dtypes.Float32 {
				panic(fmt.Errorf("parameter %s is %s: the optimizer handles float32 parameters", v.Name(), v.DType()))
			}
			params = append(params, v)
		}
	}
	if len(params) == 0 {
		panic(fmt.Errorf("no trainable parameters: everything is frozen"))
	}
	lookups := t.embeddingLookups(g, vals, params)
	outs := &stepOutputs{}
	var wrt, ids []*graph.Node
	for _, v := range params {
		if ls := lookups[v]; len(ls) > 0 {
			outs.params = append(outs.params, paramOutputs{v: v, lookups: len(ls)})
			for _, l := range ls {
				wrt, ids = append(wrt, l.rows), append(ids, l.ids)
			}
		} else {
			outs.params = append(outs.params, paramOutputs{v: v})
			wrt = append(wrt, v.NodeValue(g))
		}
	}
	t.stepOuts.Store(g, outs)
	grads := graph.Gradient(loss, wrt...)
	for i, id := range ids {
		if id.DType() != dtypes.Int32 {
			ids[i] = graph.ConvertDType(id, dtypes.Int32)
		}
	}
	return append(append([]*graph.Node{loss}, grads...), ids...)
}

// stepOutputs describes the outputs of a step graph after the loss: for
// each parameter in order, its gradient, or the gradients of the rows its
// embedding lookups gathered ([..., dim] each); then the ids of every
// lookup ([..., 1] int32), in the same order.
type stepOutputs struct{ params []paramOutputs }

// paramOutputs is one parameter of a step graph.
type paramOutputs struct {
	v       *model.Variable
	lookups int // number of embedding lookups (0: dense gradient)
}

// lookup is one embedding lookup in a step graph: the gathered rows and
// their ids.
type lookup struct{ rows, ids *graph.Node }

// embeddingLookups finds the trainable embedding tables whose only use in g
// is row lookups by nn.Embedding modules. Their gradient is a scatter-add
// of the gathered rows' gradients: rather than a dense [num, dim] gradient
// (a fresh 15.6 MB buffer for bert-tiny's vocabulary at each step), the
// step graph returns the rows' gradients and ids, and adamW scatters them.
func (t *Trainer) embeddingLookups(g *graph.Graph, vals execute.Values, params []*model.Variable) map[*model.Variable][]lookup {
	byNode := map[*graph.Node]*model.Variable{}
	for _, v := range params {
		if v.Shape().Rank() == 2 {
			byNode[v.NodeValue(g)] = v
		}
	}
	found := map[*model.Variable][]lookup{}
	gathers := map[*graph.Node]bool{}
	for _, n := range t.mg.Graph.Nodes() {
		if n.Op != ir.CallModule {
			continue
		}
		if mod, ok := t.mg.Model.Module(n.Target); !ok {
			continue
		} else if _, ok := mod.(*nn.Embedding); !ok {
			continue
		}
		rows, ok := vals[n].(*graph.Node)
		if !ok || rows.Type() != graph.NodeTypeGather || len(rows.Inputs()) != 2 {
			continue
		}
		v := byNode[rows.Inputs()[0]]
		ids := rows.Inputs()[1]
		dim := rows.Shape().Dimensions
		if v == nil || ids.Shape().Dimensions[ids.Rank()-1] != 1 || dim[len(dim)-1] != v.Shape().Dimensions[1] {
			continue
		}
		found[v] = append(found[v], lookup{rows: rows, ids: ids})
		gathers[rows] = true
	}
	// A table used by anything but those lookups keeps a dense gradient.
	for _, n := range g.Nodes() {
		if gathers[n] {
			continue
		}
		for _, in := range n.Inputs() {
			if v := byNode[in]; v != nil {
				delete(found, v)
			}
		}
	}
	return found
}

// Step runs one optimizer step on a batch at learning rate lr and returns
// the batch loss (before the update) and the gradient norm (before
// clipping), read back from the device. Concurrent calls run one after
// the other.
func (t *Trainer) Step(b Batch, lr float64) (loss, gradNorm float64, err error) {
	if t.graph == nil {
		return t.fusedStep(b, lr)
	}
	lossT, normT, err := t.graphStep(b, lr)
	if err != nil {
		return 0, 0, err
	}
	defer execute.Finalize(lossT, normT)
	if loss, err = scalarOf(lossT); err == nil {
		gradNorm, err = scalarOf(normT)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	return loss, gradNorm, nil
}

// graphStep runs one step of the graph trainer and returns the loss and
// the gradient norm, left on the device (the caller's to read or free).
func (t *Trainer) graphStep(b Batch, lr float64) (loss, gradNorm *tensors.Tensor, err error) {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	args, err := batchArgs(b, t.inputs)
	if err != nil {
		return nil, nil, fmt.Errorf("train: %w", err)
	}
	hyper := t.graph.hyper(lr)
	defer hyper.FinalizeAll()
	defer execute.FreeUploads(args...)()
	args = append(args, hyper)
	if err := t.compiled.prepare(t.graph.exec, args); err != nil {
		return nil, nil, fmt.Errorf("train step: %w", err)
	}
	outs, err := t.graph.exec.Call(args...)
	if err != nil {
		return nil, nil, fmt.Errorf("train step: %w", err)
	}
	execute.Finalize(outs[2:]...)
	t.graph.steps++
	return outs[0], outs[1], nil
}

// fusedStep is Step for the fused trainer.
func (t *Trainer) fusedStep(b Batch, lr float64) (loss, gradNorm float64, err error) {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	args, err := batchArgs(b, t.inputs)
	if err != nil {
		return 0, 0, fmt.Errorf("train: %w", err)
	}
	if err := t.compiled.prepare(t.step, args); err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	defer execute.FreeUploads(args...)()
	outs, g, err := t.step.CallWithGraph(args...)
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	defer execute.Finalize(outs...)
	desc, ok := t.stepOuts.Load(g)
	if !ok {
		return 0, 0, fmt.Errorf("train step: no parameters recorded for the step graph")
	}
	params := desc.(*stepOutputs).params
	next, nextIDs := 1, 1 // the next gradient, the next lookup's ids
	for _, p := range params {
		nextIDs += max(p.lookups, 1)
	}
	var grads []paramGrad
	for _, p := range params {
		pg := paramGrad{v: p.v}
		if p.lookups == 0 {
			pg.dense = outs[next]
			next++
		} else {
			for range p.lookups {
				pg.rows = append(pg.rows, outs[next])
				pg.ids = append(pg.ids, outs[nextIDs])
				next, nextIDs = next+1, nextIDs+1
			}
		}
		grads = append(grads, pg)
	}
	if nextIDs != len(outs) {
		return 0, 0, fmt.Errorf("train step: %d outputs, want %d", len(outs), nextIDs)
	}
	l, err := scalarOf(outs[0])
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	n, err := t.opt.update(t.cfg, lr, grads)
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	return l, n, nil
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

// LogEntry is one logged point of training.
type LogEntry struct {
	Step         int     `json:"step"`
	Epoch        float64 `json:"epoch"`
	Loss         float64 `json:"loss"`
	LearningRate float64 `json:"learning_rate"`
	GradNorm     float64 `json:"grad_norm"`
}

// History is what Train returns: the logged losses and the totals.
// Seconds is the whole run; CompileSeconds the part of it spent building
// and compiling the Compiles training executables.
type History struct {
	Log            []LogEntry `json:"log"`
	Steps          int        `json:"steps"`
	Examples       int        `json:"examples"`
	Seconds        float64    `json:"seconds"`
	FinalLoss      float64    `json:"final_loss"`
	Compiles       int        `json:"compiles"`
	CompileSeconds float64    `json:"compile_seconds"`
}

// StepSeconds is the training time without the compiles.
func (h *History) StepSeconds() float64 { return h.Seconds - h.CompileSeconds }

// Progress receives training progress: after every step (for progress
// bars and live plots) and at every logging point.
type Progress interface {
	// OnStep is called after each optimizer step.
	OnStep(step, total int, loss float64)
	// OnLog is called every LogEvery steps with the mean loss since the
	// last log.
	OnLog(e LogEntry)
}

// lossReadEvery is how often the graph trainer reads a step's loss back
// for the progress reporter (each read waits for the device).
const lossReadEvery = 250 * time.Millisecond

// Train runs cfg.Epochs passes over the data. epoch(e) yields the batches
// of epoch e (shuffled by the caller, e.g. with seed+e); stepsPerEpoch is
// their number (for the schedule and the progress total).
//
// With the graph trainer the loss stays on the device: the mean of each
// logging window is read when it is logged, and a step's loss for the
// progress reporter at most every lossReadEvery (OnStep gets the latest
// loss read). A loss that is not finite stops training at the first read
// that sees it.
func (t *Trainer) Train(epoch func(e int) Batches, stepsPerEpoch int, progress Progress) (*History, error) {
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("train: steps per epoch must be ≥ 1, got %d", stepsPerEpoch)
	}
	total := stepsPerEpoch * t.cfg.Epochs
	h := &History{}
	start := nowFn()
	compiled := t.compiled.compiles()
	defer func() {
		c := t.compiled.compiles()
		h.Compiles, h.CompileSeconds = c.Count-compiled.Count, c.Seconds-compiled.Seconds
	}()
	step := 0
	window, windowN := 0.0, 0
	var lastLoss, lastNorm *tensors.Tensor // the graph trainer's latest step, on the device
	defer func() { execute.Finalize(lastLoss, lastNorm) }()
	lastRead := time.Time{}
	loss, norm := math.NaN(), 0.0
	diverged := func(v float64, at string, lr float64) error {
		return fmt.Errorf("train: loss is %v %s (learning rate %g): training diverged", v, at, lr)
	}
	if t.graph != nil {
		if err := resetLossSum(t.mg.Model.Store); err != nil {
			return h, err
		}
	}
	for e := 0; e < t.cfg.Epochs; e++ {
		for b, err := range epoch(e) {
			if err != nil {
				return h, err
			}
			if step >= total {
				return h, fmt.Errorf("train: epoch %d yielded more than the %d batches announced", e, stepsPerEpoch)
			}
			examples, err := examplesIn(b)
			if err != nil {
				return h, err
			}
			lr := t.cfg.LearningRateAt(step, total)
			logNow := t.cfg.LogEvery > 0 && ((step+1)%t.cfg.LogEvery == 0 || step+1 == total)
			if t.graph == nil {
				if loss, norm, err = t.fusedStep(b, lr); err != nil {
					return h, err
				}
				if math.IsNaN(loss) || math.IsInf(loss, 0) {
					return h, diverged(loss, fmt.Sprintf("at step %d", step+1), lr)
				}
				window += loss
			} else {
				lossT, normT, err := t.graphStep(b, lr)
				if err != nil {
					return h, err
				}
				execute.Finalize(lastLoss, lastNorm)
				lastLoss, lastNorm = lossT, normT
				if now := nowFn(); now.Sub(lastRead) >= lossReadEvery || step+1 == total || logNow {
					lastRead = now
					if loss, err = scalarOf(lossT); err != nil {
						return h, fmt.Errorf("train step: %w", err)
					}
					if math.IsNaN(loss) || math.IsInf(loss, 0) {
						return h, diverged(loss, fmt.Sprintf("at step %d", step+1), lr)
					}
				}
			}
			step++
			h.Examples += examples
			windowN++
			h.FinalLoss = loss
			if progress != nil {
				progress.OnStep(step, total, loss)
			}
			if logNow {
				mean := window / float64(windowN)
				if t.graph != nil {
					sum, err := readScalar(t.mg.Model.Store, "loss_sum")
					if err == nil {
						norm, err = scalarOf(lastNorm)
					}
					if err == nil {
						err = resetLossSum(t.mg.Model.Store)
					}
					if err != nil {
						return h, fmt.Errorf("train: reading the loss: %w", err)
					}
					if mean = sum / float64(windowN); math.IsNaN(mean) || math.IsInf(mean, 0) {
						return h, diverged(mean, fmt.Sprintf("in steps %d–%d", step-windowN+1, step), lr)
					}
				}
				entry := LogEntry{Step: step, Epoch: float64(step) / float64(stepsPerEpoch), Loss: mean,
					LearningRate: t.cfg.LearningRateAt(step, total), GradNorm: norm}
				h.Log = append(h.Log, entry)
				if progress != nil {
					progress.OnLog(entry)
				}
				window, windowN = 0, 0
			}
		}
	}
	h.Steps = step
	h.Seconds = nowFn().Sub(start).Seconds()
	return h, nil
}
