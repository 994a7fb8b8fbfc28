package studydata

import (
	"fmt"
	"maps"
	"time"
)

// TrialState is the life-cycle state of a trial.
type TrialState int

// Trial states. A trial starts Running (or Waiting, when it is enqueued: a
// retry of a failed trial, or Study.EnqueueTrial) and ends Complete, Pruned
// or Fail. The values are Optuna's TrialState.
const (
	// Running: the objective has not returned yet (or its process crashed
	// and no one has noticed yet).
	Running TrialState = iota
	// Complete: the objective returned a finite value.
	Complete
	// Pruned: the objective returned an error wrapping ErrPruned.
	Pruned
	// Fail: the objective returned another error, panicked, returned NaN or
	// ±Inf, or its process died.
	Fail
	// Waiting: enqueued, with its parameters fixed, for the next worker
	// that asks for a trial (Optuna's WAITING).
	Waiting
)

var stateNames = [...]string{"running", "complete", "pruned", "fail", "waiting"}

// String returns "running", "complete", "pruned", "fail" or "waiting".
func (s TrialState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("TrialState(%d)", int(s))
}

// IsFinished reports whether the state is Complete, Pruned or Fail.
func (s TrialState) IsFinished() bool { return s == Complete || s == Pruned || s == Fail }

// ParseTrialState parses a state as String writes it.
func ParseTrialState(s string) (TrialState, error) {
	for i, n := range stateNames {
		if s == n {
			return TrialState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown trial state %q (allowed: running, complete, pruned, fail, waiting)", s)
}

// Direction says whether a study minimises or maximises its objective.
type Direction int

// Study directions; the zero value is Minimize, Optuna's default.
const (
	// Minimize: lower objective values are better.
	Minimize Direction = iota
	// Maximize: higher objective values are better.
	Maximize
)

// String returns "minimize" or "maximize".
func (d Direction) String() string {
	switch d {
	case Minimize:
		return "minimize"
	case Maximize:
		return "maximize"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// ParseDirection parses "minimize" or "maximize" (Optuna's spelling; "min"
// and "max" are accepted too).
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "minimize", "min":
		return Minimize, nil
	case "maximize", "max":
		return Maximize, nil
	}
	return 0, fmt.Errorf("unknown study direction %q (allowed: minimize, maximize)", s)
}

// Better reports whether a is strictly better than b in direction d.
func (d Direction) Better(a, b float64) bool {
	if d == Maximize {
		return a > b
	}
	return a < b
}

// FrozenTrial is the record of a trial as the storage holds it.
type FrozenTrial struct {
	// Number is the trial's index in its study, unique across every process
	// sharing the study's storage.
	Number int
	// State is the trial's state.
	State TrialState
	// Value is the objective value when State is Complete, NaN otherwise.
	Value float64
	// Params maps each suggested parameter to the value the objective got:
	// float64 for floats, int for ints, the choice for categoricals.
	Params map[string]any
	// Distributions maps each suggested parameter to its distribution.
	Distributions map[string]Distribution
	// UserAttrs holds the values set with Trial.SetUserAttr. A journal gives
	// them back as JSON decodes them (numbers as float64, objects as maps).
	UserAttrs map[string]any
	// SystemAttrs holds the samplers' bookkeeping (the grid point, say).
	SystemAttrs map[string]string
	// Message says why a trial failed or was pruned (the error text).
	Message string
	// Started and Finished are the wall-clock times of the trial's start and
	// end; Finished is zero while the trial runs, Started while it waits.
	Started, Finished time.Time

	// InternalParams holds Params in the internal representation
	// (Distribution): what storages keep and samplers read.
	InternalParams map[string]float64
	// Recovered is set on a trial failed by crash recovery (its process
	// died or stopped beating) rather than by its objective.
	Recovered bool
}

// Duration returns Finished − Started, or 0 while the trial runs.
func (t FrozenTrial) Duration() time.Duration {
	if t.Finished.IsZero() {
		return 0
	}
	return t.Finished.Sub(t.Started)
}

func (t FrozenTrial) Clone() FrozenTrial {
	c := t
	c.Params = maps.Clone(t.Params)
	c.Distributions = maps.Clone(t.Distributions)
	c.UserAttrs = maps.Clone(t.UserAttrs)
	c.SystemAttrs = maps.Clone(t.SystemAttrs)
	c.InternalParams = maps.Clone(t.InternalParams)
	return c
}

// CountStates counts the trials of ts in any of states.
func CountStates(ts []FrozenTrial, states ...TrialState) int {
	n := 0
	for _, t := range ts {
		for _, st := range states {
			if t.State == st {
				n++
				break
			}
		}
	}
	return n
}
