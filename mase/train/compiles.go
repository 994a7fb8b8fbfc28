package train

import (
	"sync"
	"time"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Compiles counts the executables a trainer or an evaluator compiled (one
// per distinct set of input shapes) and the seconds spent building and
// compiling them, apart from the time of the steps themselves.
type Compiles struct {
	Count   int     `json:"compiles"`
	Seconds float64 `json:"compile_seconds"`
}

// Add returns the sum of two counts.
func (c Compiles) Add(o Compiles) Compiles {
	return Compiles{Count: c.Count + o.Count, Seconds: c.Seconds + o.Seconds}
}

// compileTracker compiles an executable for a call's input shapes ahead
// of the call, so that compiling is timed apart from running.
type compileTracker struct {
	mu   sync.Mutex
	seen map[*graph.Graph]bool
	n    Compiles
}

// prepare compiles exec for the shapes of args, if not done yet.
func (c *compileTracker) prepare(exec *model.Exec, args []any) error {
	ss := make([]shapes.Shape, len(args))
	for i, a := range args {
		ss[i] = a.(*tensors.Tensor).Shape()
	}
	start := time.Now()
	g, err := exec.Compile(ss...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[*graph.Graph]bool{}
	}
	if !c.seen[g] {
		c.seen[g] = true
		c.n.Count++
		c.n.Seconds += time.Since(start).Seconds()
	}
	return nil
}

// compiles returns the count so far.
func (c *compileTracker) compiles() Compiles {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
