package train

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Compiles counts the executables a trainer or an evaluator compiled (one
// per distinct set of input shapes) and the seconds spent building and
// compiling them, apart from the time of the steps themselves; Hits
// counts the calls that found their executable already compiled.
type Compiles struct {
	Count   int     `json:"compiles"`
	Seconds float64 `json:"compile_seconds"`
	Hits    int     `json:"cache_hits"`
}

// Add returns the sum of two counts.
func (c Compiles) Add(o Compiles) Compiles {
	return Compiles{Count: c.Count + o.Count, Seconds: c.Seconds + o.Seconds, Hits: c.Hits + o.Hits}
}

// CompileEvent is one executable a trainer or an evaluator compiled: the
// input shapes that caused it (a new batch size or sequence length is a
// new executable) and the seconds its build and compile took.
type CompileEvent struct {
	Shapes  string  `json:"shapes"`
	Seconds float64 `json:"seconds"`
}

// maxCompileEvents bounds the log a tracker keeps (the count goes on).
const maxCompileEvents = 1000

// compileTracker compiles an executable for a call's input shapes ahead
// of the call, so that compiling is timed apart from running.
type compileTracker struct {
	mu   sync.Mutex
	seen map[*graph.Graph]bool
	n    Compiles
	log  []CompileEvent
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
	if c.seen[g] {
		c.n.Hits++
		return nil
	}
	c.seen[g] = true
	secs := time.Since(start).Seconds()
	c.n.Count++
	c.n.Seconds += secs
	if len(c.log) < maxCompileEvents {
		var names []string
		for _, s := range ss {
			names = append(names, s.String())
		}
		c.log = append(c.log, CompileEvent{Shapes: strings.Join(names, ", "), Seconds: secs})
	}
	return nil
}

// events returns the compiles logged so far, oldest first.
func (c *compileTracker) events() []CompileEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// compiles returns the count so far.
func (c *compileTracker) compiles() Compiles {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
