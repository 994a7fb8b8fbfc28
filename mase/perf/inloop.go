package perf

import (
	"fmt"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// InLoop is a computation repeated inside one executable: a While loop
// runs a step Reps times, each repetition taking the state the previous
// one returned, so the backend can neither hoist the work out of the loop
// nor merge repetitions. One call's time over Reps is the step's time
// without the per-call dispatch every executable pays (DispatchFloor),
// which on a GPU hides kernels of a few tens of microseconds.
type InLoop struct {
	Reps int
	exec *graph.Exec
	// buildErr is the step's error, recorded while the loop is built (at
	// the first call).
	buildErr error
}

// Counter is the loop's repetition counter (an int32 scalar, 0 in the
// first repetition), for steps that must make their state depend on the
// repetition (see NewInLoop).
type Counter = *graph.Node

// NewInLoop prepares the loop on be. step maps the state — one node per
// input of Time, in order — to the next state of the same shapes and
// dtypes, or returns an error (Time reports it); i is the repetition
// counter. The executable returns only the first value of the final
// state's first tensor, so the time of a call is the loop's, not a
// transfer of its result.
func NewInLoop(be compute.Backend, reps int, step func(i Counter, state []*graph.Node) ([]*graph.Node, error)) (*InLoop, error) {
	if reps < 1 {
		return nil, fmt.Errorf("perf: a loop needs at least one repetition (got %d)", reps)
	}
	// The counter, its limit and its increment come in as inputs: GoMLX
	// caches scalar constants per graph, not per function, so a constant
	// made in one closure cannot be used in another; only the step makes
	// constants, all inside the body.
	l := &InLoop{Reps: reps}
	exec, err := graph.NewExec(be, func(inputs []*graph.Node) *graph.Node {
		g := inputs[0].Graph()
		params := func(g *graph.Graph) []*graph.Node {
			ps := make([]*graph.Node, len(inputs))
			for k, in := range inputs {
				ps[k] = graph.Parameter(g, fmt.Sprintf("loop%d", k), in.Shape())
			}
			return ps
		}
		cond := graph.NewClosure(g, func(g *graph.Graph) []*graph.Node {
			ps := params(g)
			return []*graph.Node{graph.LessThan(ps[0], ps[1])}
		})
		body := graph.NewClosure(g, func(g *graph.Graph) []*graph.Node {
			ps := params(g)
			i, limit, one, state := ps[0], ps[1], ps[2], ps[3:]
			// A step's error keeps the graph valid (the state passes
			// through): a panic here would leave the executable unusable.
			next, err := step(i, state)
			if err == nil && len(next) != len(state) {
				err = fmt.Errorf("perf: the loop's step returned %d values for a state of %d", len(next), len(state))
			}
			if err != nil {
				l.buildErr, next = err, state
			}
			return append([]*graph.Node{graph.Add(i, one), limit, one}, next...)
		})
		out := graph.While(cond, body, inputs...)
		// The first value by a slice, not a sum: go-xla v0.4.1 caches one
		// reduction function per dtype and builder, made in the first
		// function that reduces, so a float32 sum here after one in the
		// body (softmax) refers to the body's and fails to compile.
		first := make([]graph.SliceAxisSpec, out[3].Rank())
		for a := range first {
			first[a] = graph.AxisRange(0, 1)
		}
		return graph.ConvertDType(graph.Reshape(graph.Slice(out[3], first...)), dtypes.Float32)
	})
	if err != nil {
		return nil, err
	}
	l.exec = exec
	return l, nil
}

// Time runs the loop once from the initial state inputs and returns the
// time per repetition and the first value of the final state's first
// tensor (a check that the work was done). The first call of a new input shape
// includes compilation: warm up first.
func (l *InLoop) Time(inputs ...*tensors.Tensor) (perRep time.Duration, first float64, err error) {
	args := []any{tensors.FromScalar(int32(0)), tensors.FromScalar(int32(l.Reps)), tensors.FromScalar(int32(1))}
	for _, t := range inputs {
		args = append(args, t)
	}
	start := time.Now()
	out, err := l.exec.Call(args...)
	if err != nil {
		return 0, 0, err
	}
	if l.buildErr != nil {
		out[0].MustFinalizeAll()
		return 0, 0, l.buildErr
	}
	// Reading the scalar waits for the device.
	v, err := tensors.CopyFlatData[float32](out[0])
	elapsed := time.Since(start)
	out[0].MustFinalizeAll()
	if err != nil {
		return 0, 0, err
	}
	return elapsed / time.Duration(l.Reps), float64(v[0]), nil
}

// Close frees the executable.
func (l *InLoop) Close() { l.exec.Finalize() }

// DispatchFloor is the median time of one call of a trivial executable (a
// scalar addition whose result is read back) on be, over calls calls
// after a warm-up: what every executable call costs before any kernel
// runs. Eager execution pays it once per node.
func DispatchFloor(be compute.Backend, calls int) (time.Duration, error) {
	if calls < 1 {
		return 0, fmt.Errorf("perf: the dispatch floor needs at least one call (got %d)", calls)
	}
	exec, err := graph.NewExec(be, func(x *graph.Node) *graph.Node { return graph.AddScalar(x, 1) })
	if err != nil {
		return 0, err
	}
	defer exec.Finalize()
	x := tensors.FromScalar(float32(1))
	var ts []time.Duration
	for k := range calls + 3 {
		start := time.Now()
		out, err := exec.Call(x)
		if err != nil {
			return 0, err
		}
		_, err = tensors.CopyFlatData[float32](out[0])
		elapsed := time.Since(start)
		out[0].MustFinalizeAll()
		if err != nil {
			return 0, err
		}
		if k >= 3 {
			ts = append(ts, elapsed)
		}
	}
	return Summarise(ts).Median, nil
}
