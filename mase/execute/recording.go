package execute

import (
	"fmt"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/timeline"
)

// The track and categories of the spans the runners record (SetRecorder).
const (
	// TrackRun is the host thread that runs the graph: one span per Run,
	// and inside it one per executable call or host kernel.
	TrackRun = "run"
	// CatRun is a whole Run.
	CatRun = "run"
	// CatExecute is an executable call on input shapes met before.
	CatExecute = "execute"
	// CatCompile is a call that built and compiled its executable for new
	// input shapes first (the span holds that first execution too).
	CatCompile = "compile"
	// CatHost is a host kernel (a graph break) run as Go code.
	CatHost = "host"
	// CatTransfer is a copy of a run's input from the host into the
	// backend's memory (to the GPU on XLA), before the first call that
	// reads it.
	CatTransfer = "transfer"
)

// upload copies the host tensors among args into be's memory ahead of the
// calls that read them, one span each on tl (nil: none), so that the
// calls' spans hold their execution only. Tensors already on a device are
// left as they are.
func upload(be compute.Backend, tl *timeline.Recorder, args []any) error {
	for _, a := range args {
		t, ok := a.(*tensors.Tensor)
		if !ok || t == nil || !t.Ok() || t.IsOnAnyDevice() {
			continue
		}
		start := tl.Now()
		if err := t.MaterializeOnDevice(be, true, 0); err != nil {
			return fmt.Errorf("copying an input %s to the backend: %w", t.Shape(), err)
		}
		if tl != nil {
			tl.Add(timeline.Event{Track: TrackRun, Cat: CatTransfer, Name: "upload " + t.Shape().String(), Start: start, Dur: tl.Now() - start,
				Args: map[string]any{"bytes": int64(t.Memory())}})
		}
	}
	return nil
}

// argShapes describes the tensor arguments of a call, as
// "(Float32)[8 128], (Int32)[8 128]".
func argShapes(args []any) string {
	var b strings.Builder
	for _, a := range args {
		t, ok := a.(*tensors.Tensor)
		if !ok {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Shape().String())
	}
	return b.String()
}

// SetRecorder makes Run record its spans on r (nil stops): the Run on
// TrackRun, and inside it each executable call (CatCompile the first time
// a stage meets its input shapes, then CatExecute) and each host kernel
// (CatHost). A span's args name the stage's nodes ("nodes"), its label
// (op and target of the first node) and, for a compile, the input shapes.
// Stages that run nothing (views folded into a producer, constants,
// inputs handed on) record no span.
func (s *staged) SetRecorder(r *timeline.Recorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec = r
}

// Executables returns the number of executables compiled so far.
func (s *staged) Executables() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.execs)
}

func (s *staged) recorder() *timeline.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec
}

// stageSpan records one stage's span that started at start.
func (s *staged) stageSpan(tl *timeline.Recorder, st *stage, cat string, start time.Duration, shapes string) {
	if tl == nil {
		return
	}
	names := make([]string, len(st.nodes))
	for i, n := range st.nodes {
		names[i] = n.Name
	}
	args := map[string]any{"nodes": names, "label": s.label(st)}
	if shapes != "" {
		args["shapes"] = shapes
	}
	tl.Add(timeline.Event{Track: TrackRun, Cat: cat, Name: st.nodes[0].Name, Start: start, Dur: tl.Now() - start, Args: args})
}
