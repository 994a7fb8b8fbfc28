package search

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Storage holds studies and their trials. It is implemented by
// InMemoryStorage (one process) and JournalStorage (an append-only file that
// several processes can share, and that a study resumes from).
type Storage interface {
	// createStudy records the study, or finds it; it returns the recorded
	// direction and whether the study existed.
	createStudy(name string, dir Direction) (Direction, bool, error)
	// createTrial allocates the next trial number and records a Running trial.
	createTrial(study string) (int, time.Time, error)
	setParam(study string, number int, name string, x float64, d Distribution) error
	setUserAttr(study string, number int, key string, value any) error
	setSystemAttr(study string, number int, key, value string) error
	finishTrial(study string, number int, state TrialState, value float64, msg string) (FrozenTrial, error)
	// trials returns every trial of the study in number order. The maps of
	// finished trials are shared: callers must not modify them.
	trials(study string) ([]FrozenTrial, error)
	// failStale marks Fail the Running trials whose process is gone.
	failStale(study string) ([]int, error)
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

func (m *memState) running(study string, number int) (*trialRec, error) {
	s, err := m.study(study)
	if err != nil {
		return nil, err
	}
	if number < 0 || number >= len(s.trials) {
		return nil, fmt.Errorf("trial %d does not exist in study %q (it has %d trials)", number, study, len(s.trials))
	}
	t := s.trials[number]
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
		if t.ft.State == Running {
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

func (s *InMemoryStorage) createTrial(study string) (int, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state.study(study)
	if err != nil {
		return 0, time.Time{}, err
	}
	n, now := len(st.trials), time.Now()
	return n, now, s.state.createTrial(study, n, now, selfOwner())
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

func (s *InMemoryStorage) finishTrial(study string, number int, state TrialState, value float64, msg string) (FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ft, err := s.state.finish(study, number, state, value, msg, time.Now(), false)
	return ft.clone(), err
}

func (s *InMemoryStorage) trials(study string) ([]FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.trials(study)
}

// failStale does nothing: every trial of an in-memory storage belongs to this process.
func (s *InMemoryStorage) failStale(string) ([]int, error) { return nil, nil }
