package train

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// Evaluator computes the metrics of a MaseGraph with (loss, logits)
// outputs in eval mode. The metrics of a batch are computed on the device
// (argmax, comparison with the labels, sums) and read back as three
// numbers, so an evaluation moves no logits to the host; rows labelled
// nn.IgnoreIndex (a padded batch's padding rows) are left out.
type Evaluator struct {
	mg       *ir.MaseGraph
	inputs   []string
	exec     *model.Exec
	compiled compileTracker
}

// NewEvaluator prepares the evaluation of mg on the default backend; its
// executables are compiled on first use, one per batch shape.
func NewEvaluator(mg *ir.MaseGraph) (*Evaluator, error) {
	e := &Evaluator{mg: mg}
	var err error
	if e.inputs, err = lossGraphInputs(mg); err != nil {
		return nil, err
	}
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	if err := mg.Graph.Lint(); err != nil {
		return nil, err
	}
	e.exec, err = model.NewExec(be, mg.Model.Store, e.metricsGraph)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return e, nil
}

// metricsGraph builds [Σ loss over valid rows, correct rows, valid rows]
// for one batch (inputs in placeholder order).
func (e *Evaluator) metricsGraph(scope *model.Scope, ins []*graph.Node) []*graph.Node {
	g := ins[0].Graph()
	byName := map[string]*graph.Node{}
	for i, name := range e.inputs {
		byName[name] = ins[i]
	}
	vals, err := execute.Build(g, scope, e.mg, byName, execute.Mode{})
	if err != nil {
		panic(err)
	}
	out := vals[e.mg.Graph.OutputNode()].([]any)
	loss, logits := out[0].(*graph.Node), out[1].(*graph.Node)
	labels := byName["labels"]
	if logits.Rank() < 1 || logits.Shape().Size() != labels.Shape().Size()*logits.Shape().Dimensions[logits.Rank()-1] {
		panic(fmt.Errorf("logits %v for labels %v: want one row of class scores per label", logits.Shape().Dimensions, labels.Shape().Dimensions))
	}
	classes := logits.Shape().Dimensions[logits.Rank()-1]
	logits = graph.Reshape(logits, labels.Shape().Size(), classes)
	labels = graph.Reshape(labels, labels.Shape().Size())
	keep := graph.NotEqual(labels, graph.Scalar(g, labels.DType(), nn.IgnoreIndex))
	pred := graph.ArgMax(logits, -1, labels.DType())
	right := graph.LogicalAnd(keep, graph.Equal(pred, labels))
	valid := graph.ReduceAllSum(graph.ConvertDType(keep, dtypes.Float32))
	correct := graph.ReduceAllSum(graph.ConvertDType(right, dtypes.Float32))
	lossSum := graph.Mul(graph.ConvertDType(loss, dtypes.Float32), valid)
	return []*graph.Node{graph.Stack([]*graph.Node{lossSum, correct, valid}, 0)}
}

// Evaluate runs every batch and returns the accuracy (argmax of the
// logits against the labels, as MASE's evaluate_metric "accuracy") and the
// mean loss over the examples. Device copies of the batches made for the
// evaluation are freed after each batch.
func (e *Evaluator) Evaluate(batches Batches) (Metrics, error) {
	var m Metrics
	correct, lossSum := 0.0, 0.0
	for b, err := range batches {
		if err != nil {
			return m, err
		}
		sums, err := e.batch(b)
		if err != nil {
			return m, err
		}
		lossSum += float64(sums[0])
		correct += float64(sums[1])
		m.Examples += int(sums[2])
	}
	if m.Examples == 0 {
		return m, fmt.Errorf("evaluate: no examples")
	}
	m.Accuracy = correct / float64(m.Examples)
	m.Loss = lossSum / float64(m.Examples)
	if math.IsNaN(m.Loss) {
		return m, fmt.Errorf("evaluate: the loss is NaN")
	}
	return m, nil
}

// batch returns one batch's three sums.
func (e *Evaluator) batch(b Batch) ([]float32, error) {
	args, err := batchArgs(b, e.inputs)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	if err := e.compiled.prepare(e.exec, args); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	defer execute.FreeUploads(args...)()
	outs, err := e.exec.Call(args...)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	defer execute.Finalize(outs...)
	return tensors.CopyFlatData[float32](outs[0])
}

// Compiles returns the executables compiled so far and their time.
func (e *Evaluator) Compiles() Compiles { return e.compiled.compiles() }

// CompileLog lists the executables the evaluator compiled, each with the
// input shapes that caused it and its seconds.
func (e *Evaluator) CompileLog() []CompileEvent { return e.compiled.events() }

// Close frees the evaluator's executables.
func (e *Evaluator) Close() { e.exec.Finalize() }

// EvaluateGraph evaluates mg once over the batches (NewEvaluator,
// Evaluate, Close).
func EvaluateGraph(mg *ir.MaseGraph, batches Batches) (Metrics, error) {
	e, err := NewEvaluator(mg)
	if err != nil {
		return Metrics{}, err
	}
	defer e.Close()
	return e.Evaluate(batches)
}

// lossGraphInputs checks that mg outputs (loss, logits) and takes labels,
// and returns its inputs in placeholder order.
func lossGraphInputs(mg *ir.MaseGraph) ([]string, error) {
	out := mg.Graph.OutputNode()
	if out == nil {
		return nil, fmt.Errorf("train: graph has no output")
	}
	if tuple, ok := out.Arg(0).([]any); !ok || len(tuple) != 2 {
		return nil, fmt.Errorf("train: the graph must output (loss, logits): trace the model with labels, e.g. inputs input_ids,attention_mask,labels (traced: %v)", mg.InputNames)
	}
	var inputs []string
	for _, p := range mg.Graph.Placeholders() {
		inputs = append(inputs, p.Target)
	}
	for _, name := range inputs {
		if name == "labels" {
			return inputs, nil
		}
	}
	return nil, fmt.Errorf("train: the graph has no labels input (traced: %v)", inputs)
}

// batchArgs orders a batch's tensors as the graph's inputs.
func batchArgs(b Batch, inputs []string) ([]any, error) {
	args := make([]any, 0, len(inputs))
	for _, name := range inputs {
		x, ok := b[name]
		if !ok {
			return nil, fmt.Errorf("batch lacks input %q (the graph takes %v)", name, inputs)
		}
		args = append(args, x)
	}
	return args, nil
}
