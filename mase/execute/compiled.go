package execute

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/timeline"
)

// Compiled runs a whole MaseGraph as one GoMLX computation, JIT-compiled
// once per set of input shapes and cached (the compiled execution mode).
type Compiled struct {
	graph   *ir.Graph
	m       *nn.Model
	mode    Mode
	inputs  []string // placeholder targets, in graph order
	capture bool     // return every intermediate tensor (shape propagation)
	exec    *model.Exec
	be      compute.Backend

	mu sync.Mutex
	// traced records, per build, which MaseGraph nodes the flat outputs
	// belong to and the non-tensor values seen while building.
	traced *buildRecord
	// builds counts the graph builds (one per input shapes: a compile).
	builds int

	rec *timeline.Recorder // nil: not profiling
}

// SetRecorder makes Run record its spans on r (nil stops): each call, as
// "compile" when it built and compiled the graph for new input shapes
// (the span then holds that first execution too), else "execute".
func (c *Compiled) SetRecorder(r *timeline.Recorder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rec = r
}

// Executables returns the number of executables compiled so far (one per
// set of input shapes).
func (c *Compiled) Executables() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds
}

// buildRecord remembers how the flat outputs of one build map back to nodes.
type buildRecord struct {
	outputs  []*ir.Node // for capture mode: the node of each flat output
	nOutputs int        // number of tensors in the output node's value
	consts   Values     // values that are Go constants (shape arithmetic)
	outTuple bool       // the output node holds a tuple
}

// Compile prepares mg for execution with its model's parameters on the
// default backend.
func Compile(mg *ir.MaseGraph, mode Mode) (*Compiled, error) {
	be, err := backend.Default()
	if err != nil {
		return nil, err
	}
	return CompileOn(be, mg, mode, false)
}

// CompileOn is Compile on a given backend. With capture set, Run returns
// every intermediate tensor too (see RunCapture).
func CompileOn(be compute.Backend, mg *ir.MaseGraph, mode Mode, capture bool) (*Compiled, error) {
	m, ig := mg.Model, mg.Graph
	if err := ig.Lint(); err != nil {
		return nil, err
	}
	c := &Compiled{graph: ig, m: m, mode: mode, capture: capture, be: be}
	for _, p := range ig.Placeholders() {
		c.inputs = append(c.inputs, p.Target)
	}
	fn := func(scope *model.Scope, ins []*graph.Node) []*graph.Node {
		byName := make(map[string]*graph.Node, len(ins))
		for i, name := range c.inputs {
			byName[name] = ins[i]
		}
		g := ins[0].Graph()
		vals, err := Build(g, scope, mg, byName, mode)
		if err != nil {
			panic(err)
		}
		rec := &buildRecord{consts: Values{}}
		var outs []*graph.Node
		outVal := vals[ig.OutputNode()]
		switch v := outVal.(type) {
		case *graph.Node:
			outs = append(outs, v)
		case []any:
			rec.outTuple = true
			for i, e := range v {
				n, ok := e.(*graph.Node)
				if !ok {
					panic(fmt.Errorf("output %d is %T, not a tensor", i, e))
				}
				outs = append(outs, n)
			}
		default:
			panic(fmt.Errorf("graph output is %T, want a tensor or a tuple of tensors", outVal))
		}
		rec.nOutputs = len(outs)
		for _, n := range ig.Nodes() {
			switch v := vals[n].(type) {
			case *graph.Node:
				if c.capture && n.Op != ir.Output {
					rec.outputs = append(rec.outputs, n)
					outs = append(outs, v)
				}
			default:
				rec.consts[n] = v
			}
		}
		c.mu.Lock()
		c.traced = rec
		c.builds++
		c.mu.Unlock()
		return outs
	}
	if len(c.inputs) == 0 {
		return nil, fmt.Errorf("graph has no placeholder inputs")
	}
	exec, err := model.NewExec(be, m.Store, fn)
	if err != nil {
		return nil, fmt.Errorf("creating executor: %w", err)
	}
	c.exec = exec
	return c, nil
}

// InputNames returns the graph's inputs in the order Run expects them.
func (c *Compiled) InputNames() []string { return append([]string(nil), c.inputs...) }

func (c *Compiled) args(inputs map[string]*tensors.Tensor) ([]any, error) {
	args := make([]any, len(c.inputs))
	for i, name := range c.inputs {
		t, ok := inputs[name]
		if !ok {
			return nil, fmt.Errorf("missing input %q (the graph takes %v)", name, c.inputs)
		}
		args[i] = t
	}
	if err := checkNoExtraInputs(inputs, c.inputs); err != nil {
		return nil, err
	}
	return args, nil
}

// checkNoExtraInputs fails on an input the graph does not take.
func checkNoExtraInputs(inputs map[string]*tensors.Tensor, takes []string) error {
	for name := range inputs {
		if !slices.Contains(takes, name) {
			return fmt.Errorf("unexpected input %q (the graph takes %v)", name, takes)
		}
	}
	return nil
}

// Run executes the graph and returns the output tensors (one, or one per
// element of an output tuple): they are the caller's to finalize. Device
// copies of inputs Run uploaded are freed before it returns.
func (c *Compiled) Run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	outs, rec, err := c.run(inputs)
	if err != nil {
		return nil, err
	}
	Finalize(outs[rec.nOutputs:]...) // captured intermediates nobody asked for
	return outs[:rec.nOutputs], nil
}

func (c *Compiled) run(inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, *buildRecord, error) {
	args, err := c.args(inputs)
	if err != nil {
		return nil, nil, err
	}
	defer FreeUploads(args...)()
	c.mu.Lock()
	tl, builds := c.rec, c.builds
	c.mu.Unlock()
	if err := upload(c.be, tl, args); err != nil {
		return nil, nil, err
	}
	start := tl.Now()
	outs, err := c.exec.Call(args...)
	c.mu.Lock()
	rec, built := c.traced, c.builds > builds
	c.mu.Unlock()
	if tl != nil {
		e := timeline.Event{Track: TrackRun, Cat: CatExecute, Name: "compiled graph", Start: start, Dur: tl.Now() - start,
			Args: map[string]any{"nodes": len(c.graph.Nodes())}}
		if built {
			e.Cat, e.Args["shapes"] = CatCompile, argShapes(args)
		}
		tl.Add(e)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("executing graph: %w", err)
	}
	if rec == nil {
		Finalize(outs...)
		return nil, nil, fmt.Errorf("executing graph: internal error: the graph was not built")
	}
	if len(outs) < rec.nOutputs {
		Finalize(outs...)
		return nil, nil, fmt.Errorf("executing graph: got %d outputs, want %d", len(outs), rec.nOutputs)
	}
	return outs, rec, nil
}

// Close frees the compiled executables. The Compiled must not be used
// after.
func (c *Compiled) Close() { c.exec.Finalize() }

// RunCapture executes a graph compiled with capture and returns the value
// of every node: tensors for tensor nodes, Go constants for the rest. The
// output node maps to its tensor or to a []any tuple of tensors.
func (c *Compiled) RunCapture(inputs map[string]*tensors.Tensor) (map[*ir.Node]any, error) {
	if !c.capture {
		return nil, fmt.Errorf("RunCapture needs a graph compiled with capture")
	}
	outs, rec, err := c.run(inputs)
	if err != nil {
		return nil, err
	}
	vals := map[*ir.Node]any{}
	for n, v := range rec.consts {
		vals[n] = v
	}
	for i, n := range rec.outputs {
		vals[n] = outs[rec.nOutputs+i]
	}
	if rec.outTuple {
		tuple := make([]any, rec.nOutputs)
		for i := range tuple {
			tuple[i] = outs[i]
		}
		vals[c.graph.OutputNode()] = tuple
	} else {
		vals[c.graph.OutputNode()] = outs[0]
	}
	return vals, nil
}

// Run executes mg once in eval mode on the default backend (compiled: one
// GoMLX computation, freed after the call) and returns its outputs, which
// are the caller's.
func Run(mg *ir.MaseGraph, inputs map[string]*tensors.Tensor) ([]*tensors.Tensor, error) {
	c, err := Compile(mg, Mode{})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Run(inputs)
}
