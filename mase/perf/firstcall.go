package perf

import (
	"fmt"
	"time"

	"github.com/gomase/gomase/mase/execute"
	"github.com/gomase/gomase/mase/timeline"
)

// FirstCallParts splits a runner's first call into what a timeline of it
// shows, beside the same parts of its last (steady) call, so that what the
// first call spends beyond a steady one is named, not guessed:
//
//   - Building: the executable calls that met their input shapes for the
//     first time: building the GoMLX graph of the stage, compiling it and
//     running it once. BuiltSteady is what the same stages take in the
//     last call, so Building − BuiltSteady is the building and compiling.
//   - Executing: calls of executables built earlier in the same call
//     (eager mode's nodes that share one).
//   - Host: the host kernels between compiled segments (graph breaks).
//   - Rest: the call's time outside all of these: the runner planning its
//     stages for these input shapes, uploading the inputs and handing
//     tensors from stage to stage.
type FirstCallParts struct {
	Total       time.Duration `json:"total_ns"`
	Building    time.Duration `json:"building_ns"`
	BuiltSteady time.Duration `json:"built_steady_ns"`
	Executables int           `json:"executables_built"`
	Executing   time.Duration `json:"executing_ns"`
	Host        time.Duration `json:"host_ns"`
	Rest        time.Duration `json:"rest_ns"`
	// Last is the same split of the last call (Building 0).
	Last CallParts `json:"last"`
}

// CallParts is the split of one recorded call.
type CallParts struct {
	Total, Executing, Host, Rest time.Duration
}

// Compiling is Building − BuiltSteady: what building and compiling the
// first call's new executables took beyond running them.
func (f FirstCallParts) Compiling() time.Duration { return max(0, f.Building-f.BuiltSteady) }

// recordFirstAndLast attaches a recorder to r for its first and its last
// call (calls in all), and returns the hook for timeInterleaved and a
// function that splits the two recorded calls. It returns nils when r
// cannot record.
func recordFirstAndLast(r execute.Runner, calls int) (before func(call int), parts func() (*FirstCallParts, error)) {
	rr, ok := r.(RecordingRunner)
	if !ok || calls < 2 {
		return nil, nil
	}
	first, last := timeline.New(), timeline.New()
	before = func(call int) {
		switch call {
		case 0:
			rr.SetRecorder(first)
		case 1:
			rr.SetRecorder(nil)
		case calls - 1:
			rr.SetRecorder(last)
		}
	}
	parts = func() (*FirstCallParts, error) {
		rr.SetRecorder(nil)
		return splitFirstCall(first.Events(), last.Events())
	}
	return before, parts
}

// splitFirstCall splits the spans of a first and a last call into
// FirstCallParts: each call is one execute.CatRun span holding its stage
// spans, or, from a runner of one computation (execute.Compiled), that
// computation's span alone.
func splitFirstCall(first, last []timeline.Event) (*FirstCallParts, error) {
	f, lastParts := &FirstCallParts{}, CallParts{}
	steady := map[string]time.Duration{} // stage name → its time in the last call
	split := func(events []timeline.Event, p *CallParts, built func(timeline.Event)) error {
		runs, building := 0, time.Duration(0)
		for _, e := range events {
			switch e.Cat {
			case execute.CatRun:
				runs++
				p.Total += e.Dur
			case execute.CatExecute:
				p.Executing += e.Dur
			case execute.CatHost:
				p.Host += e.Dur
			case execute.CatCompile:
				building += e.Dur
				built(e)
			}
		}
		switch runs {
		case 0: // a runner of one computation records only its executable call
			p.Total = p.Executing + p.Host + building
		case 1:
		default:
			return fmt.Errorf("perf: a recorded call holds %d run spans, want at most 1", runs)
		}
		return nil
	}
	if err := split(last, &lastParts, func(timeline.Event) {}); err != nil {
		return nil, err
	}
	for _, e := range last {
		if e.Cat == execute.CatExecute || e.Cat == execute.CatCompile {
			steady[e.Name] += e.Dur
		}
	}
	var firstParts CallParts
	if err := split(first, &firstParts, func(e timeline.Event) {
		f.Building += e.Dur
		f.BuiltSteady += steady[e.Name]
		f.Executables++
	}); err != nil {
		return nil, err
	}
	lastParts.Rest = max(0, lastParts.Total-lastParts.Executing-lastParts.Host)
	f.Total, f.Executing, f.Host = firstParts.Total, firstParts.Executing, firstParts.Host
	f.Rest = max(0, f.Total-f.Building-f.Executing-f.Host)
	f.Last = lastParts
	return f, nil
}
