package studydata

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Storage holds studies and their trials. Package storages implements it
// with InMemoryStorage (one process), JournalStorage (an append-only file
// that several processes can share, and that a study resumes from) and
// PostgresStorage (a database that workers on several machines share).
// Studies call it; a caller holding a Storage normally goes through a
// search.Study instead.
type Storage interface {
	// CreateStudy records the study, or finds it; it returns the recorded
	// direction and whether the study existed.
	CreateStudy(name string, dir Direction) (Direction, bool, error)
	// StudyDirection returns the direction of a study the storage holds.
	StudyDirection(name string) (Direction, error)
	// StartTrial starts a trial: the Waiting trial of the lowest number,
	// made Running, or else a new Running trial with the next number. plan
	// (nil: none) is called first, under the storage's lock (so that no
	// other worker starts a trial meanwhile), with the study's trials and the
	// Waiting trial to be started (nil when a new one would be made); it
	// returns the system attributes to record with the trial, or an error
	// that leaves the storage as it was (search.ErrStudyStopped, ErrWait).
	// StartTrial returns the trial as started, with what it already held.
	StartTrial(study string, plan StartPlan) (FrozenTrial, error)
	// EnqueueTrial records a Waiting trial with the next number, holding the
	// parameters and attributes of ft.
	EnqueueTrial(study string, ft FrozenTrial) (int, error)
	SetParam(study string, number int, name string, x float64, d Distribution) error
	SetUserAttr(study string, number int, key string, value any) error
	SetSystemAttr(study string, number int, key, value string) error
	// FinishTrial finishes a Running trial. When it ends Fail and retries is
	// > 0, the trial that retries it (RetryOf) is enqueued in the same change
	// and returned too.
	FinishTrial(study string, number int, state TrialState, value float64, msg string, retries int) (FrozenTrial, *FrozenTrial, error)
	// Trials returns every trial of the study in number order. The maps of
	// finished Trials are shared: callers must not modify them.
	Trials(study string) ([]FrozenTrial, error)
	// FailStale marks Fail the Running trials whose process is gone, each
	// with its retry as FinishTrial enqueues it.
	FailStale(study string, retries int) ([]StaleTrial, error)
	// UnjudgedTrials returns the Running trials of the study whose worker
	// this process can tell neither alive nor dead (another machine's
	// process that sends no heartbeat, or no worker recorded): FailStale
	// never fails them, so a worker waiting for them would wait without end.
	UnjudgedTrials(study string) ([]UnjudgedTrial, error)
	// ImportStudy creates study name, which must not exist yet, holding
	// trials (numbered 0, 1, …; each Waiting or finished), in one change.
	ImportStudy(name string, dir Direction, trials []FrozenTrial) error
}

// StartPlan decides, under a storage's lock, whether a trial may start and
// with which system attributes (see Storage.StartTrial).
type StartPlan func(trials []FrozenTrial, waiting *FrozenTrial) (map[string]string, error)

// ErrWait is a StartPlan's answer when no trial may start until a running
// one finishes (the study's last trials, or the grid's last points, are
// running elsewhere).
var ErrWait = errors.New("search: no trial can start until a running trial finishes")

// StaleTrial is a trial FailStale marked Fail, and the number of the trial
// enqueued to retry it (-1: none).
type StaleTrial struct {
	Number, Retry int
}

// UnjudgedTrial is a Running trial whose worker cannot be judged alive or
// dead from this process (see Storage.UnjudgedTrials).
type UnjudgedTrial struct {
	Number int
	// Owner names its worker ("pid 12 on host a1b2"); "" when none is
	// recorded.
	Owner string
	// Why says why it cannot be judged, in words for a message.
	Why string
}

// System attributes of retried and enqueued trials, named as Optuna names them.
const (
	// FailedTrialAttr: the number of the original trial a retry repeats.
	FailedTrialAttr = "failed_trial"
	// RetryHistoryAttr: the numbers of the failed attempts before a retry,
	// the original first, as a JSON list.
	RetryHistoryAttr = "retry_history"
	// FixedParamsAttr: the parameters of an enqueued trial (EnqueueTrial),
	// a JSON object from name to value.
	FixedParamsAttr = "fixed_params"
)

// RetryOf returns the Waiting trial that retries the failed trial ft, made
// as Optuna's RetryFailedTrialCallback(max_retry=retries) makes it: the
// same parameters (distributions and values), user attributes and system
// attributes, plus failed_trial, the number of the original trial, and
// retry_history, the numbers of the failed attempts so far (ft's last).
// ok is false when retries ≤ 0 or ft's retries are used up.
func RetryOf(ft FrozenTrial, retries int) (FrozenTrial, bool) {
	if retries <= 0 || ft.State != Fail {
		return FrozenTrial{}, false
	}
	var history []int
	if h, ok := ft.SystemAttrs[RetryHistoryAttr]; ok {
		if json.Unmarshal([]byte(h), &history) != nil {
			history = nil // not gomase's: count it as no retry
		}
	}
	history = append(history, ft.Number)
	if len(history) > retries {
		return FrozenTrial{}, false
	}
	original := ft.Number
	if f, ok := ft.SystemAttrs[FailedTrialAttr]; ok {
		if n, err := strconv.Atoi(f); err == nil {
			original = n
		}
	}
	r := ft.Clone()
	r.Number, r.State, r.Value, r.Message, r.Recovered = 0, Waiting, math.NaN(), "", false
	r.Started, r.Finished = time.Time{}, time.Time{}
	if r.SystemAttrs == nil {
		r.SystemAttrs = map[string]string{}
	}
	hj, _ := json.Marshal(history)
	r.SystemAttrs[FailedTrialAttr] = strconv.Itoa(original)
	r.SystemAttrs[RetryHistoryAttr] = string(hj)
	return r, true
}

// CheckAdded validates a trial given whole (enqueued or imported): Waiting
// or finished, a finite value if Complete, a distribution for each
// parameter and values in the internal form.
func CheckAdded(ft *FrozenTrial) error {
	if ft.State != Waiting && !ft.State.IsFinished() {
		return fmt.Errorf("trial %d is %v; a trial added whole must be waiting, complete, pruned or fail", ft.Number, ft.State)
	}
	if ft.State == Complete && (math.IsNaN(ft.Value) || math.IsInf(ft.Value, 0)) {
		return fmt.Errorf("trial %d is complete with value %v; a complete trial needs a finite value", ft.Number, ft.Value)
	}
	for name, d := range ft.Distributions {
		if d == nil {
			return fmt.Errorf("trial %d, parameter %q: no distribution", ft.Number, name)
		}
		if err := d.Validate(); err != nil {
			return fmt.Errorf("trial %d, parameter %q: %w", ft.Number, name, err)
		}
		if _, ok := ft.InternalParams[name]; !ok {
			return fmt.Errorf("trial %d, parameter %q: no value", ft.Number, name)
		}
	}
	for name := range ft.InternalParams {
		if _, ok := ft.Distributions[name]; !ok {
			return fmt.Errorf("trial %d, parameter %q: no distribution", ft.Number, name)
		}
	}
	return nil
}

// NormalizeAdded fills in the maps of a trial added whole and recomputes
// Params from the internal values.
func NormalizeAdded(ft FrozenTrial) FrozenTrial {
	c := ft.Clone()
	if c.Distributions == nil {
		c.Distributions = map[string]Distribution{}
	}
	if c.InternalParams == nil {
		c.InternalParams = map[string]float64{}
	}
	if c.UserAttrs == nil {
		c.UserAttrs = map[string]any{}
	}
	if c.SystemAttrs == nil {
		c.SystemAttrs = map[string]string{}
	}
	c.Params = make(map[string]any, len(c.InternalParams))
	for name, x := range c.InternalParams {
		if d, ok := c.Distributions[name]; ok {
			c.Params[name] = d.ToExternal(x)
		}
	}
	if c.State != Complete {
		c.Value = math.NaN()
	}
	return c
}
