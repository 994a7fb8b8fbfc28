package search

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Storage holds studies and their trials. It is implemented by
// InMemoryStorage (one process), JournalStorage (an append-only file that
// several processes can share, and that a study resumes from) and
// PostgresStorage (a database that workers on several machines share).
type Storage interface {
	// createStudy records the study, or finds it; it returns the recorded
	// direction and whether the study existed.
	createStudy(name string, dir Direction) (Direction, bool, error)
	// studyDirection returns the direction of a study the storage holds.
	studyDirection(name string) (Direction, error)
	// startTrial starts a trial: the Waiting trial of the lowest number,
	// made Running, or else a new Running trial with the next number. plan
	// (nil: none) is called first, under the storage's lock (so that no
	// other worker starts a trial meanwhile), with the study's trials and the
	// Waiting trial to be started (nil when a new one would be made); it
	// returns the system attributes to record with the trial, or an error
	// that leaves the storage as it was (ErrStudyStopped, errWait).
	// startTrial returns the trial as started, with what it already held.
	startTrial(study string, plan startPlan) (FrozenTrial, error)
	// enqueueTrial records a Waiting trial with the next number, holding the
	// parameters and attributes of ft.
	enqueueTrial(study string, ft FrozenTrial) (int, error)
	setParam(study string, number int, name string, x float64, d Distribution) error
	setUserAttr(study string, number int, key string, value any) error
	setSystemAttr(study string, number int, key, value string) error
	// finishTrial finishes a Running trial. When it ends Fail and retries is
	// > 0, the trial that retries it (retryOf) is enqueued in the same change
	// and returned too.
	finishTrial(study string, number int, state TrialState, value float64, msg string, retries int) (FrozenTrial, *FrozenTrial, error)
	// trials returns every trial of the study in number order. The maps of
	// finished trials are shared: callers must not modify them.
	trials(study string) ([]FrozenTrial, error)
	// failStale marks Fail the Running trials whose process is gone, each
	// with its retry as finishTrial enqueues it.
	failStale(study string, retries int) ([]staleTrial, error)
	// importStudy creates study name, which must not exist yet, holding
	// trials (numbered 0, 1, …; each Waiting or finished), in one change.
	importStudy(name string, dir Direction, trials []FrozenTrial) error
}

// startPlan decides, under a storage's lock, whether a trial may start and
// with which system attributes (see Storage.startTrial).
type startPlan func(trials []FrozenTrial, waiting *FrozenTrial) (map[string]string, error)

// errWait is a startPlan's answer when no trial may start until a running
// one finishes (the study's last trials, or the grid's last points, are
// running elsewhere).
var errWait = errors.New("search: no trial can start until a running trial finishes")

// staleTrial is a trial failStale marked Fail, and the number of the trial
// enqueued to retry it (-1: none).
type staleTrial struct {
	number, retry int
}

// System attributes of retried and enqueued trials, named as Optuna names them.
const (
	// failedTrialAttr: the number of the original trial a retry repeats.
	failedTrialAttr = "failed_trial"
	// retryHistoryAttr: the numbers of the failed attempts before a retry,
	// the original first, as a JSON list.
	retryHistoryAttr = "retry_history"
	// fixedParamsAttr: the parameters of an enqueued trial (EnqueueTrial),
	// a JSON object from name to value.
	fixedParamsAttr = "fixed_params"
)

// retryOf returns the Waiting trial that retries the failed trial ft, made
// as Optuna's RetryFailedTrialCallback(max_retry=retries) makes it: the
// same parameters (distributions and values), user attributes and system
// attributes, plus failed_trial, the number of the original trial, and
// retry_history, the numbers of the failed attempts so far (ft's last).
// ok is false when retries ≤ 0 or ft's retries are used up.
func retryOf(ft FrozenTrial, retries int) (FrozenTrial, bool) {
	if retries <= 0 || ft.State != Fail {
		return FrozenTrial{}, false
	}
	var history []int
	if h, ok := ft.SystemAttrs[retryHistoryAttr]; ok {
		if json.Unmarshal([]byte(h), &history) != nil {
			history = nil // not gomase's: count it as no retry
		}
	}
	history = append(history, ft.Number)
	if len(history) > retries {
		return FrozenTrial{}, false
	}
	original := ft.Number
	if f, ok := ft.SystemAttrs[failedTrialAttr]; ok {
		if n, err := strconv.Atoi(f); err == nil {
			original = n
		}
	}
	r := ft.clone()
	r.Number, r.State, r.Value, r.Message, r.recovered = 0, Waiting, math.NaN(), "", false
	r.Started, r.Finished = time.Time{}, time.Time{}
	if r.SystemAttrs == nil {
		r.SystemAttrs = map[string]string{}
	}
	hj, _ := json.Marshal(history)
	r.SystemAttrs[failedTrialAttr] = strconv.Itoa(original)
	r.SystemAttrs[retryHistoryAttr] = string(hj)
	return r, true
}

// checkAdded validates a trial given whole (enqueued or imported): Waiting
// or finished, a finite value if Complete, a distribution for each
// parameter and values in the internal form.
func checkAdded(ft *FrozenTrial) error {
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
		if err := d.validate(); err != nil {
			return fmt.Errorf("trial %d, parameter %q: %w", ft.Number, name, err)
		}
		if _, ok := ft.internal[name]; !ok {
			return fmt.Errorf("trial %d, parameter %q: no value", ft.Number, name)
		}
	}
	for name := range ft.internal {
		if _, ok := ft.Distributions[name]; !ok {
			return fmt.Errorf("trial %d, parameter %q: no distribution", ft.Number, name)
		}
	}
	return nil
}

// normalizeAdded fills in the maps of a trial added whole and recomputes
// Params from the internal values.
func normalizeAdded(ft FrozenTrial) FrozenTrial {
	c := ft.clone()
	if c.Distributions == nil {
		c.Distributions = map[string]Distribution{}
	}
	if c.internal == nil {
		c.internal = map[string]float64{}
	}
	if c.UserAttrs == nil {
		c.UserAttrs = map[string]any{}
	}
	if c.SystemAttrs == nil {
		c.SystemAttrs = map[string]string{}
	}
	c.Params = make(map[string]any, len(c.internal))
	for name, x := range c.internal {
		if d, ok := c.Distributions[name]; ok {
			c.Params[name] = d.ToExternal(x)
		}
	}
	if c.State != Complete {
		c.Value = math.NaN()
	}
	return c
}

// sortedKeys returns the keys of m in order (records are written in it).
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

type trialRec struct {
	ft    FrozenTrial
	owner owner
}

type studyRec struct {
	name   string
	dir    Direction
	trials []*trialRec
}

// memState is the in-memory model of a storage; the journal replays its file
// into one. Its methods validate before they change anything, so a failed
// call leaves the state as it was. Callers hold the lock.
type memState struct {
	studies map[string]*studyRec
}

func newMemState() *memState { return &memState{studies: map[string]*studyRec{}} }

func (m *memState) study(name string) (*studyRec, error) {
	s, ok := m.studies[name]
	if !ok {
		return nil, fmt.Errorf("study %q does not exist in the storage", name)
	}
	return s, nil
}

func (m *memState) createStudy(name string, dir Direction) (Direction, bool) {
	if s, ok := m.studies[name]; ok {
		return s.dir, true
	}
	m.studies[name] = &studyRec{name: name, dir: dir}
	return dir, false
}

func (m *memState) createTrial(study string, number int, start time.Time, o owner) error {
	s, err := m.study(study)
	if err != nil {
		return err
	}
	if number != len(s.trials) {
		return fmt.Errorf("trial number %d is out of sequence; the next trial number of study %q is %d", number, study, len(s.trials))
	}
	s.trials = append(s.trials, &trialRec{
		ft: FrozenTrial{
			Number: number, State: Running, Value: math.NaN(), Started: start,
			Params: map[string]any{}, Distributions: map[string]Distribution{}, internal: map[string]float64{},
			UserAttrs: map[string]any{}, SystemAttrs: map[string]string{},
		},
		owner: o,
	})
	return nil
}

// addTrial records a trial given whole (Waiting, or finished) as number.
func (m *memState) addTrial(study string, number int, ft FrozenTrial) error {
	s, err := m.study(study)
	if err != nil {
		return err
	}
	if number != len(s.trials) {
		return fmt.Errorf("trial number %d is out of sequence; the next trial number of study %q is %d", number, study, len(s.trials))
	}
	ft.Number = number
	if err := checkAdded(&ft); err != nil {
		return err
	}
	ft = normalizeAdded(ft)
	s.trials = append(s.trials, &trialRec{ft: ft})
	return nil
}

// firstWaiting returns the Waiting trial of the lowest number, or nil.
func (s *studyRec) firstWaiting() *trialRec {
	for _, t := range s.trials {
		if t.ft.State == Waiting {
			return t
		}
	}
	return nil
}

// start makes a Waiting trial Running, owned by o.
func (m *memState) start(study string, number int, when time.Time, o owner) error {
	s, err := m.study(study)
	if err != nil {
		return err
	}
	if number < 0 || number >= len(s.trials) {
		return fmt.Errorf("trial %d does not exist in study %q (it has %d trials)", number, study, len(s.trials))
	}
	t := s.trials[number]
	if t.ft.State != Waiting {
		return fmt.Errorf("trial %d of study %q is %v, not waiting; only a waiting trial can be started", number, study, t.ft.State)
	}
	t.ft.State, t.ft.Started, t.owner = Running, when, o
	return nil
}

// plan runs a startPlan on the state: it returns the Waiting trial to start
// (nil: a new one) and the system attributes to give the trial.
func (m *memState) plan(study string, plan startPlan) (*trialRec, map[string]string, error) {
	s, err := m.study(study)
	if err != nil {
		return nil, nil, err
	}
	w := s.firstWaiting()
	if plan == nil {
		return w, nil, nil
	}
	ts, err := m.trials(study)
	if err != nil {
		return nil, nil, err
	}
	var wp *FrozenTrial
	if w != nil {
		wp = &ts[w.ft.Number]
	}
	attrs, err := plan(ts, wp)
	return w, attrs, err
}

func (m *memState) running(study string, number int) (*trialRec, error) {
	s, err := m.study(study)
	if err != nil {
		return nil, err
	}
	if number < 0 || number >= len(s.trials) {
		return nil, fmt.Errorf("trial %d does not exist in study %q (it has %d trials)", number, study, len(s.trials))
	}
	t := s.trials[number]
	if t.ft.State == Waiting {
		return nil, fmt.Errorf("trial %d of study %q is waiting (enqueued), not running; only a running trial can change", number, study)
	}
	if t.ft.State != Running {
		msg := ""
		if t.ft.Message != "" {
			msg = ": " + t.ft.Message
		}
		return nil, fmt.Errorf("trial %d of study %q is already finished (%v%s); only a running trial can change", number, study, t.ft.State, msg)
	}
	return t, nil
}

func (m *memState) setParam(study string, number int, name string, x float64, d Distribution) error {
	t, err := m.running(study, number)
	if err != nil {
		return err
	}
	if old, ok := t.ft.Distributions[name]; ok && !old.equal(d) {
		return fmt.Errorf("parameter %q of trial %d is already set with distribution %v, not %v", name, number, old, d)
	}
	t.ft.internal[name] = x
	t.ft.Distributions[name] = d
	t.ft.Params[name] = d.ToExternal(x)
	return nil
}

func (m *memState) setUserAttr(study string, number int, key string, v any) error {
	t, err := m.running(study, number)
	if err != nil {
		return err
	}
	t.ft.UserAttrs[key] = v
	return nil
}

func (m *memState) setSystemAttr(study string, number int, key, v string) error {
	t, err := m.running(study, number)
	if err != nil {
		return err
	}
	t.ft.SystemAttrs[key] = v
	return nil
}

// checkFinish validates the outcome a trial is finished with.
func checkFinish(number int, state TrialState, value float64) error {
	if !state.IsFinished() {
		return fmt.Errorf("cannot finish trial %d in state %v; a finished state is complete, pruned or fail", number, state)
	}
	if state == Complete && (math.IsNaN(value) || math.IsInf(value, 0)) {
		return fmt.Errorf("cannot complete trial %d with value %v; a complete trial needs a finite value", number, value)
	}
	return nil
}

func (m *memState) finish(study string, number int, state TrialState, value float64, msg string, end time.Time, recovered bool) (FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return FrozenTrial{}, err
	}
	t, err := m.running(study, number)
	if err != nil {
		return FrozenTrial{}, err
	}
	t.ft.State = state
	t.ft.Value = math.NaN()
	if state == Complete {
		t.ft.Value = value
	}
	t.ft.Message = msg
	t.ft.Finished = end
	t.ft.recovered = recovered
	return t.ft, nil
}

func (m *memState) trials(study string) ([]FrozenTrial, error) {
	s, err := m.study(study)
	if err != nil {
		return nil, err
	}
	out := make([]FrozenTrial, len(s.trials))
	for i, t := range s.trials {
		if !t.ft.State.IsFinished() {
			out[i] = t.ft.clone()
		} else {
			out[i] = t.ft
		}
	}
	return out, nil
}

// InMemoryStorage keeps studies in the memory of one process; it is the
// default storage of NewStudy. It is safe for concurrent use.
type InMemoryStorage struct {
	mu    sync.Mutex
	state *memState
}

// NewInMemoryStorage returns an empty in-memory storage.
func NewInMemoryStorage() *InMemoryStorage {
	return &InMemoryStorage{state: newMemState()}
}

func (s *InMemoryStorage) createStudy(name string, dir Direction) (Direction, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, existed := s.state.createStudy(name, dir)
	return d, existed, nil
}

func (s *InMemoryStorage) studyDirection(name string) (Direction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state.study(name)
	if err != nil {
		return 0, err
	}
	return st.dir, nil
}

func (s *InMemoryStorage) startTrial(study string, plan startPlan) (FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, attrs, err := s.state.plan(study, plan)
	if err != nil {
		return FrozenTrial{}, err
	}
	st := s.state.studies[study]
	n, now := len(st.trials), time.Now()
	if w != nil {
		n = w.ft.Number
		err = s.state.start(study, n, now, selfOwner())
	} else {
		err = s.state.createTrial(study, n, now, selfOwner())
	}
	if err != nil {
		return FrozenTrial{}, err
	}
	for _, k := range sortedKeys(attrs) {
		if err := s.state.setSystemAttr(study, n, k, attrs[k]); err != nil {
			return FrozenTrial{}, err
		}
	}
	return st.trials[n].ft.clone(), nil
}

func (s *InMemoryStorage) enqueueTrial(study string, ft FrozenTrial) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state.study(study)
	if err != nil {
		return 0, err
	}
	n := len(st.trials)
	ft.State = Waiting
	return n, s.state.addTrial(study, n, ft)
}

func (s *InMemoryStorage) setParam(study string, number int, name string, x float64, d Distribution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setParam(study, number, name, x, d)
}

func (s *InMemoryStorage) setUserAttr(study string, number int, key string, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setUserAttr(study, number, key, v)
}

func (s *InMemoryStorage) setSystemAttr(study string, number int, key, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setSystemAttr(study, number, key, v)
}

func (s *InMemoryStorage) finishTrial(study string, number int, state TrialState, value float64, msg string, retries int) (FrozenTrial, *FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ft, err := s.state.finish(study, number, state, value, msg, time.Now(), false)
	if err != nil {
		return FrozenTrial{}, nil, err
	}
	r, err := s.state.enqueueRetry(study, ft, retries)
	return ft.clone(), r, err
}

// enqueueRetry adds the retry of failed trial ft (retryOf), if any, and returns it.
func (m *memState) enqueueRetry(study string, ft FrozenTrial, retries int) (*FrozenTrial, error) {
	r, ok := retryOf(ft, retries)
	if !ok {
		return nil, nil
	}
	st := m.studies[study]
	n := len(st.trials)
	if err := m.addTrial(study, n, r); err != nil {
		return nil, err
	}
	c := st.trials[n].ft.clone()
	return &c, nil
}

func (s *InMemoryStorage) trials(study string) ([]FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.trials(study)
}

// failStale does nothing: every trial of an in-memory storage belongs to this process.
func (s *InMemoryStorage) failStale(string, int) ([]staleTrial, error) { return nil, nil }

func (s *InMemoryStorage) importStudy(name string, dir Direction, trials []FrozenTrial) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.importStudy(name, dir, trials)
}

// importStudy creates a study with trials given whole; on error the state
// is as it was.
func (m *memState) importStudy(name string, dir Direction, trials []FrozenTrial) error {
	if _, ok := m.studies[name]; ok {
		return fmt.Errorf("study %q already exists in the storage; import it under another name or into another storage", name)
	}
	m.createStudy(name, dir)
	for i, ft := range trials {
		if err := m.addTrial(name, i, ft); err != nil {
			delete(m.studies, name)
			return err
		}
	}
	return nil
}
