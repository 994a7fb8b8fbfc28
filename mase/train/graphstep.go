package train

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/ir"
)

// optimizerScope is where the graph trainer keeps its state in the
// model's store: AdamW's moments per parameter and the step's running
// sums. The model's parameters, checkpoints and passes never look there;
// Trainer.Close deletes it.
const optimizerScope = "/gomase_optimizer"

// graphStep is the device-resident training step: one executable per
// batch shape holds the train-mode forward, the loss, the backward pass
// (GoMLX autodiff), global-norm clipping and the AdamW update. The
// parameters and the optimizer's moments are store variables that the
// executable updates in place (GoMLX donates their buffers), so they never
// leave the device; the learning rate and the bias corrections come in as
// one small input. The loss is added into a device-side sum that the
// trainer reads only when it logs; each step returns its loss and gradient
// norm as device scalars.
type graphStep struct {
	mg       *ir.MaseGraph
	cfg      Config
	inputs   []string
	exec     *model.Exec
	compiled *compileTracker
	mu       sync.Mutex
	steps    int // optimizer steps taken (AdamW's t); guarded by mu
}

func newGraphStep(be compute.Backend, mg *ir.MaseGraph, cfg Config, inputs []string, compiled *compileTracker) (*graphStep, error) {
	s := &graphStep{mg: mg, cfg: cfg, inputs: inputs, compiled: compiled}
	var err error
	if s.exec, err = model.NewExec(be, mg.Model.Store, s.graph); err != nil {
		return nil, err
	}
	return s, nil
}

// stateVar returns (creating it, zero-filled, on first use) the optimizer
// variable kind ("m", "v") of parameter p, or a step-wide scalar (p nil).
func stateVar(store *model.Store, kind string, p *model.Variable, shape shapes.Shape) *model.Variable {
	path := optimizerScope + "/" + kind
	if p != nil {
		path += p.Path()
	}
	v := store.VariableWithShape(path, shape, graph.Zeros)
	v.SetTrainable(false)
	return v
}

// graph builds one step: ins are the batch tensors in placeholder order
// followed by the hyperparameters [lr, 1/(1-β₁ᵗ), 1/(1-β₂ᵗ)].
func (s *graphStep) graph(scope *model.Scope, ins []*graph.Node) []*graph.Node {
	g := ins[0].Graph()
	byName := map[string]*graph.Node{}
	for i, name := range s.inputs {
		byName[name] = ins[i]
	}
	hyper := ins[len(s.inputs)]
	vals, err := execute.Build(g, scope, s.mg, byName, execute.Mode{Training: true})
	if err != nil {
		panic(err)
	}
	loss := vals[s.mg.Graph.OutputNode()].([]any)[0].(*graph.Node)
	store := scope.Store()
	var params []*model.Variable
	for v := range scope.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) && !strings.HasPrefix(v.Path(), optimizerScope+"/") {
			if v.DType() != dtypes.Float32 {
				panic(fmt.Errorf("parameter %s is %s: the optimizer handles float32 parameters", v.Path(), v.DType()))
			}
			params = append(params, v)
		}
	}
	if len(params) == 0 {
		panic(fmt.Errorf("no trainable parameters: everything is frozen"))
	}
	slices.SortFunc(params, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	wrt := make([]*graph.Node, len(params))
	for i, v := range params {
		wrt[i] = v.NodeValue(g)
	}
	grads := graph.Gradient(loss, wrt...)

	// Global-norm clipping, as torch.nn.utils.clip_grad_norm_.
	f32 := func(x float64) *graph.Node { return graph.Scalar(g, dtypes.Float32, x) }
	var sq *graph.Node
	for _, gr := range grads {
		s := graph.ReduceAllSum(graph.Square(gr))
		if sq == nil {
			sq = s
		} else {
			sq = graph.Add(sq, s)
		}
	}
	norm := graph.Sqrt(sq)
	coef := f32(1)
	if s.cfg.MaxGradNorm > 0 {
		coef = graph.Min(coef, graph.Div(f32(s.cfg.MaxGradNorm), graph.Add(norm, f32(1e-6))))
	}

	// AdamW, in the order of operations of the host optimizer (adamW.apply).
	lr := graph.Slice(hyper, graph.AxisRange(0, 1))
	lr, debias1, debias2 := graph.Reshape(lr), graph.Reshape(graph.Slice(hyper, graph.AxisRange(1, 2))), graph.Reshape(graph.Slice(hyper, graph.AxisRange(2, 3)))
	b1, b2 := f32(s.cfg.Beta1), f32(s.cfg.Beta2)
	nb1, nb2 := f32(1-s.cfg.Beta1), f32(1-s.cfg.Beta2)
	eps, decay := f32(s.cfg.Epsilon), f32(s.cfg.WeightDecay)
	for i, p := range params {
		m, v := stateVar(store, "m", p, p.Shape()), stateVar(store, "v", p, p.Shape())
		gc := graph.Mul(grads[i], coef)
		m1 := graph.Add(graph.Mul(b1, m.NodeValue(g)), graph.Mul(nb1, gc))
		v1 := graph.Add(graph.Mul(b2, v.NodeValue(g)), graph.Mul(nb2, graph.Mul(gc, gc)))
		den := graph.Add(graph.Sqrt(graph.Mul(v1, debias2)), eps)
		step := graph.Div(graph.Mul(lr, graph.Mul(m1, debias1)), den)
		pv := p.NodeValue(g)
		if s.cfg.WeightDecay != 0 {
			step = graph.Add(step, graph.Mul(lr, graph.Mul(pv, decay)))
		}
		p.SetNodeValue(graph.Sub(pv, step))
		m.SetNodeValue(m1)
		v.SetNodeValue(v1)
	}
	scalar := shapes.Make(dtypes.Float32)
	lossSum := stateVar(store, "loss_sum", nil, scalar)
	lossSum.SetNodeValue(graph.Add(lossSum.NodeValue(g), graph.ConvertDType(loss, dtypes.Float32)))
	return []*graph.Node{loss, norm}
}

// run implements stepper: the loss and the gradient norm stay on the
// device until read.
func (s *graphStep) run(b Batch, lr float64) (stepValues, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	args, err := batchArgs(b, s.inputs)
	if err != nil {
		return stepValues{}, fmt.Errorf("train: %w", err)
	}
	hyper := s.hyper(lr)
	defer hyper.FinalizeAll()
	defer execute.FreeUploads(args...)()
	args = append(args, hyper)
	if err := s.compiled.prepare(s.exec, args); err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	outs, err := s.exec.Call(args...)
	if err != nil {
		return stepValues{}, fmt.Errorf("train step: %w", err)
	}
	execute.Finalize(outs[2:]...)
	s.steps++
	return stepValues{lossT: outs[0], normT: outs[1]}, nil
}

// startWindow implements stepper: the device-side loss sum restarts.
func (s *graphStep) startWindow() error { return resetLossSum(s.mg.Model.Store) }

// windowLoss implements stepper: a device read of the loss sum.
func (s *graphStep) windowLoss() (float64, error) { return readScalar(s.mg.Model.Store, "loss_sum") }

// close implements stepper: the executable and the optimizer state go.
func (s *graphStep) close() {
	s.exec.Finalize()
	_ = s.mg.Model.Store.DeleteVariablesInScope(optimizerScope)
}

// hyper returns the step's hyperparameter input for learning rate lr and
// the next optimizer step.
func (s *graphStep) hyper(lr float64) *tensors.Tensor {
	t := float64(s.steps + 1)
	return tensors.FromFlatDataAndDimensions([]float32{float32(lr),
		float32(1 / (1 - math.Pow(s.cfg.Beta1, t))), float32(1 / (1 - math.Pow(s.cfg.Beta2, t)))}, 3)
}

// readScalar returns a step-wide optimizer scalar ("loss_sum"): a device
// read.
func readScalar(store *model.Store, kind string) (float64, error) {
	v := store.GetVariable(optimizerScope + "/" + kind)
	if v == nil || !v.HasValue() {
		return 0, nil
	}
	t, err := v.Value()
	if err != nil {
		return 0, err
	}
	f, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return 0, err
	}
	return float64(f[0]), nil
}

// resetLossSum starts a new logging window.
func resetLossSum(store *model.Store) error {
	v := store.GetVariable(optimizerScope + "/loss_sum")
	if v == nil {
		return nil
	}
	return v.SetValue(tensors.FromScalar(float32(0)))
}
