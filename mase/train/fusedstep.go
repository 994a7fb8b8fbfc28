package train

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
)

// fusedStep is the training step of the Go backend: one executable per
// batch shape computes the loss and the gradients (the embedding tables'
// as the gradients of the rows looked up), and AdamW with global-norm
// clipping updates the parameters in Go, one fused loop per parameter.
type fusedStep struct {
	mg       *ir.MaseGraph
	cfg      Config
	inputs   []string
	exec     *model.Exec
	compiled *compileTracker
	// outs describes the outputs of each compiled step graph (one per set
	// of input shapes).
	outs   sync.Map // *graph.Graph → *stepOutputs
	mu     sync.Mutex
	opt    adamW   // guarded by mu
	window float64 // the summed loss since startWindow; guarded by mu
}

func newFusedStep(be compute.Backend, mg *ir.MaseGraph, cfg Config, inputs []string, compiled *compileTracker) (*fusedStep, error) {
	s := &fusedStep{mg: mg, cfg: cfg, inputs: inputs, compiled: compiled}
	var err error
	if s.exec, err = model.NewExec(be, mg.Model.Store, s.graph); err != nil {
		return nil, err
	}
	return s, nil
}

// graph builds the graph of one training step: inputs are the batch
// tensors in placeholder order; outputs are the loss and the gradients of
// the trainable parameters the loss depends on, as recorded in stepOuts
// (see stepOutputs). Clipping and AdamW run in Go on the gradients (see adamW):
// on the Go backend each elementwise graph op is a separate pass over
// memory, and the optimizer's dozen passes over the 3.9M-entry embedding
// table cost more than the whole update done in one loop.
func (s *fusedStep) graph(scope *model.Scope, ins []*graph.Node) []*graph.Node {
	g := ins[0].Graph()
	byName := map[string]*graph.Node{}
	for i, name := range s.inputs {
		byName[name] = ins[i]
	}
	vals, err := execute.Build(g, scope, s.mg, byName, execute.Mode{Training: true})
	if err != nil {
		panic(err)
	}
	loss := vals[s.mg.Graph.OutputNode()].([]any)[0].(*graph.Node)
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
	lookups := s.embeddingLookups(g, vals, params)
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
	s.outs.Store(g, outs)
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
func (s *fusedStep) embeddingLookups(g *graph.Graph, vals execute.Values, params []*model.Variable) map[*model.Variable][]lookup {
	byNode := map[*graph.Node]*model.Variable{}
	for _, v := range params {
		if v.Shape().Rank() == 2 {
			byNode[v.NodeValue(g)] = v
		}
	}
	found := map[*model.Variable][]lookup{}
	gathers := map[*graph.Node]bool{}
	for _, n := range s.mg.Graph.Nodes() {
		if n.Op != ir.CallModule {
			continue
		}
		if mod, ok := s.mg.Model.Module(n.Target); !ok {
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

// run implements stepper: the compiled forward and backward, then
// clipping and AdamW in Go.
func (s *fusedStep) run(b Batch, lr float64) (stepValues, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	args, err := batchArgs(b, s.inputs)
	if err != nil {
		return stepValues{}, fmt.Errorf("train: %w", err)
	}
	if err := s.compiled.prepare(s.exec, args); err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	defer execute.FreeUploads(args...)()
	outs, g, err := s.exec.CallWithGraph(args...)
	if err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	defer execute.Finalize(outs...)
	desc, ok := s.outs.Load(g)
	if !ok {
		return stepValues{}, fmt.Errorf("train step: no parameters recorded for the step graph")
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
		return stepValues{}, fmt.Errorf("train step: %d outputs, want %d", len(outs), nextIDs)
	}
	l, err := scalarOf(outs[0])
	if err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	n, err := s.opt.update(s.cfg, lr, grads)
	if err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	s.window += l
	return stepValues{loss: l, norm: n}, nil
}

// startWindow implements stepper.
func (s *fusedStep) startWindow() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = 0
	return nil
}

// windowLoss implements stepper.
func (s *fusedStep) windowLoss() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window, nil
}

// close implements stepper.
func (s *fusedStep) close() { s.exec.Finalize() }
