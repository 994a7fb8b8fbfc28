package train

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase"
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
type Trainer struct {
	mg     *mase.MaseGraph
	cfg    Config
	inputs []string
	step   *model.Exec
	eval   *execute.Compiled

	// stepOuts describes the outputs of each compiled step graph (one
	// per set of input shapes).
	stepOuts sync.Map // *graph.Graph → *stepOutputs
	stepMu   sync.Mutex
	opt      adamW // guarded by stepMu

	mu        sync.Mutex
	gradNorm  float64
	stepsDone int
}

// New prepares training of mg with cfg: it freezes the parameters under
// the Freeze prefixes (others keep their state: see SetFrozen, Unfreeze)
// and compiles the training step lazily on first use.
func New(mg *mase.MaseGraph, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := mg.Graph.OutputNode()
	if out == nil {
		return nil, fmt.Errorf("train: graph has no output")
	}
	if tuple, ok := out.Arg(0).([]any); !ok || len(tuple) != 2 {
		return nil, fmt.Errorf("train: the graph must output (loss, logits): trace the model with labels, e.g. inputs input_ids,attention_mask,labels (traced: %v)", mg.InputNames)
	}
	t := &Trainer{mg: mg, cfg: cfg}
	for _, p := range mg.Graph.Placeholders() {
		t.inputs = append(t.inputs, p.Target)
	}
	if !slices.Contains(t.inputs, "labels") {
		return nil, fmt.Errorf("train: the graph has no labels input (traced: %v)", t.inputs)
	}
	if err := SetFrozen(mg.Model, cfg.Freeze); err != nil {
		return nil, err
	}
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	if err := mg.Model.Store.SetRNGStateFromSeed(int64(cfg.Seed)); err != nil {
		return nil, fmt.Errorf("train: seeding dropout: %w", err)
	}
	t.step, err = model.NewExec(be, mg.Model.Store, t.stepGraph)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	if t.eval, err = execute.CompileOn(be, mg.Model, mg.Graph, execute.Mode{}, false); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	return t, nil
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
	vals, err := execute.Build(g, scope, t.mg.Model, t.mg.Graph, byName, execute.Mode{Training: true})
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
// clipping). Concurrent calls run one after the other.
func (t *Trainer) Step(b Batch, lr float64) (loss, gradNorm float64, err error) {
	t.stepMu.Lock()
	defer t.stepMu.Unlock()
	args := make([]any, 0, len(t.inputs))
	for _, name := range t.inputs {
		x, ok := b[name]
		if !ok {
			return 0, 0, fmt.Errorf("train: batch lacks input %q (the graph takes %v)", name, t.inputs)
		}
		args = append(args, x)
	}
	outs, g, err := t.step.CallWithGraph(args...)
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	defer func() {
		for _, o := range outs {
			o.FinalizeAll()
		}
	}()
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
	l := float64(tensors.MustCopyFlatData[float32](outs[0])[0])
	n, err := t.opt.update(t.cfg, lr, grads)
	if err != nil {
		return 0, 0, fmt.Errorf("train step: %w", err)
	}
	t.mu.Lock()
	t.stepsDone++
	t.gradNorm = n
	t.mu.Unlock()
	return l, n, nil
}

// Metrics are the results of an evaluation.
type Metrics struct {
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	Examples int     `json:"examples"`
}

// Evaluate runs the graph in eval mode over every batch and returns the
// accuracy (argmax of the logits against the labels, as MASE's
// evaluate_metric "accuracy") and the mean loss.
func (t *Trainer) Evaluate(batches Batches) (Metrics, error) {
	return Evaluate(t.eval, batches)
}

// Evaluate is Trainer.Evaluate for any compiled graph with (loss, logits)
// outputs.
func Evaluate(c *execute.Compiled, batches Batches) (Metrics, error) {
	var m Metrics
	correct, lossSum := 0, 0.0
	for b, err := range batches {
		if err != nil {
			return m, err
		}
		outs, err := c.Run(b)
		if err != nil {
			return m, fmt.Errorf("evaluate: %w", err)
		}
		if len(outs) != 2 {
			return m, fmt.Errorf("evaluate: the graph must output (loss, logits), got %d outputs", len(outs))
		}
		labels, err := labelsOf(b)
		if err != nil {
			return m, err
		}
		logits := tensors.MustCopyFlatData[float32](outs[1])
		dims := outs[1].Shape().Dimensions
		classes := dims[len(dims)-1]
		if len(logits) != classes*len(labels) {
			return m, fmt.Errorf("evaluate: logits %v for %d labels", dims, len(labels))
		}
		for i, y := range labels {
			row := logits[i*classes : (i+1)*classes]
			best := 0
			for j, v := range row {
				if v > row[best] {
					best = j
				}
			}
			if best == int(y) {
				correct++
			}
		}
		lossSum += float64(tensors.MustCopyFlatData[float32](outs[0])[0]) * float64(len(labels))
		m.Examples += len(labels)
	}
	if m.Examples == 0 {
		return m, fmt.Errorf("evaluate: no examples")
	}
	m.Accuracy = float64(correct) / float64(m.Examples)
	m.Loss = lossSum / float64(m.Examples)
	return m, nil
}

func labelsOf(b Batch) ([]int32, error) {
	l, ok := b["labels"]
	if !ok {
		return nil, fmt.Errorf("evaluate: batch has no labels")
	}
	return tensors.CopyFlatData[int32](l)
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
type History struct {
	Log       []LogEntry `json:"log"`
	Steps     int        `json:"steps"`
	Examples  int        `json:"examples"`
	Seconds   float64    `json:"seconds"`
	FinalLoss float64    `json:"final_loss"`
}

// Progress receives training progress: after every step (for progress
// bars and live plots) and at every logging point.
type Progress interface {
	// OnStep is called after each optimizer step.
	OnStep(step, total int, loss float64)
	// OnLog is called every LogEvery steps with the mean loss since the
	// last log.
	OnLog(e LogEntry)
}

// Train runs cfg.Epochs passes over the data. epoch(e) yields the batches
// of epoch e (shuffled by the caller, e.g. with seed+e); stepsPerEpoch is
// their number (for the schedule and the progress total).
func (t *Trainer) Train(epoch func(e int) Batches, stepsPerEpoch int, progress Progress) (*History, error) {
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("train: steps per epoch must be ≥ 1, got %d", stepsPerEpoch)
	}
	total := stepsPerEpoch * t.cfg.Epochs
	h := &History{}
	start := nowFn()
	step := 0
	window, windowN := 0.0, 0
	for e := 0; e < t.cfg.Epochs; e++ {
		for b, err := range epoch(e) {
			if err != nil {
				return h, err
			}
			if step >= total {
				return h, fmt.Errorf("train: epoch %d yielded more than the %d batches announced", e, stepsPerEpoch)
			}
			lr := t.cfg.LearningRateAt(step, total)
			loss, norm, err := t.Step(b, lr)
			if err != nil {
				return h, err
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return h, fmt.Errorf("train: loss is %v at step %d (learning rate %g): training diverged", loss, step+1, lr)
			}
			step++
			labels, _ := labelsOf(b)
			h.Examples += len(labels)
			window += loss
			windowN++
			h.FinalLoss = loss
			if progress != nil {
				progress.OnStep(step, total, loss)
			}
			if t.cfg.LogEvery > 0 && (step%t.cfg.LogEvery == 0 || step == total) {
				entry := LogEntry{Step: step, Epoch: float64(step) / float64(stepsPerEpoch), Loss: window / float64(windowN),
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

// CompiledEval returns the trainer's eval-mode executable of the graph.
func (t *Trainer) CompiledEval() *execute.Compiled { return t.eval }
