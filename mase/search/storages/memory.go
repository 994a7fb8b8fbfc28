package storages

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"
)

type trialRec struct {
	ft    studydata.FrozenTrial
	owner owner
	// The heartbeat of a Running trial (journals): the interval its worker
	// beats at (0: none), the time of its last beat or start as the worker
	// recorded it, and when this process read that record.
	beatMS     int64
	beat, seen time.Time
}

type studyRec struct {
	name   string
	dir    studydata.Direction
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

func (m *memState) createStudy(name string, dir studydata.Direction) (studydata.Direction, bool) {
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
		ft: studydata.FrozenTrial{
			Number: number, State: studydata.Running, Value: math.NaN(), Started: start,
			Params: map[string]any{}, Distributions: map[string]studydata.Distribution{}, InternalParams: map[string]float64{},
			UserAttrs: map[string]any{}, SystemAttrs: map[string]string{},
		},
		owner: o,
	})
	return nil
}

// addTrial records a trial given whole (Waiting, or finished) as number.
func (m *memState) addTrial(study string, number int, ft studydata.FrozenTrial) error {
	s, err := m.study(study)
	if err != nil {
		return err
	}
	if number != len(s.trials) {
		return fmt.Errorf("trial number %d is out of sequence; the next trial number of study %q is %d", number, study, len(s.trials))
	}
	ft.Number = number
	if err := studydata.CheckAdded(&ft); err != nil {
		return err
	}
	ft = studydata.NormalizeAdded(ft)
	s.trials = append(s.trials, &trialRec{ft: ft})
	return nil
}

// firstWaiting returns the Waiting trial of the lowest number, or nil.
func (s *studyRec) firstWaiting() *trialRec {
	for _, t := range s.trials {
		if t.ft.State == studydata.Waiting {
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
	if t.ft.State != studydata.Waiting {
		return fmt.Errorf("trial %d of study %q is %v, not waiting; only a waiting trial can be started", number, study, t.ft.State)
	}
	t.ft.State, t.ft.Started, t.owner = studydata.Running, when, o
	return nil
}

// plan runs a startPlan on the state: it returns the Waiting trial to start
// (nil: a new one) and the system attributes to give the trial.
func (m *memState) plan(study string, plan studydata.StartPlan) (*trialRec, map[string]string, error) {
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
	var wp *studydata.FrozenTrial
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
	if t.ft.State == studydata.Waiting {
		return nil, fmt.Errorf("trial %d of study %q is waiting (enqueued), not running; only a running trial can change", number, study)
	}
	if t.ft.State != studydata.Running {
		msg := ""
		if t.ft.Message != "" {
			msg = ": " + t.ft.Message
		}
		return nil, fmt.Errorf("trial %d of study %q is already finished (%v%s); only a running trial can change", number, study, t.ft.State, msg)
	}
	return t, nil
}

func (m *memState) setParam(study string, number int, name string, x float64, d studydata.Distribution) error {
	t, err := m.running(study, number)
	if err != nil {
		return err
	}
	if old, ok := t.ft.Distributions[name]; ok && !old.Equal(d) {
		return fmt.Errorf("parameter %q of trial %d is already set with distribution %v, not %v", name, number, old, d)
	}
	t.ft.InternalParams[name] = x
	t.ft.Distributions[name] = d
	t.ft.Params[name] = d.ToExternal(x)
	return nil
}

// heartbeat records a beat of a Running trial's worker at when, beating
// every ms milliseconds from now on (0: no more).
func (m *memState) heartbeat(study string, number int, when time.Time, ms int64) error {
	t, err := m.running(study, number)
	if err != nil {
		return err
	}
	if ms < 0 {
		return fmt.Errorf("heartbeat interval %d ms of trial %d is negative; it must be > 0 (or 0: none)", ms, number)
	}
	t.beat, t.beatMS, t.seen = when, ms, time.Now()
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
func checkFinish(number int, state studydata.TrialState, value float64) error {
	if !state.IsFinished() {
		return fmt.Errorf("cannot finish trial %d in state %v; a finished state is complete, pruned or fail", number, state)
	}
	if state == studydata.Complete && (math.IsNaN(value) || math.IsInf(value, 0)) {
		return fmt.Errorf("cannot complete trial %d with value %v; a complete trial needs a finite value", number, value)
	}
	return nil
}

func (m *memState) finish(study string, number int, state studydata.TrialState, value float64, msg string, end time.Time, recovered bool) (studydata.FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return studydata.FrozenTrial{}, err
	}
	t, err := m.running(study, number)
	if err != nil {
		return studydata.FrozenTrial{}, err
	}
	t.ft.State = state
	t.ft.Value = math.NaN()
	if state == studydata.Complete {
		t.ft.Value = value
	}
	t.ft.Message = msg
	t.ft.Finished = end
	t.ft.Recovered = recovered
	return t.ft, nil
}

func (m *memState) trials(study string) ([]studydata.FrozenTrial, error) {
	s, err := m.study(study)
	if err != nil {
		return nil, err
	}
	out := make([]studydata.FrozenTrial, len(s.trials))
	for i, t := range s.trials {
		if !t.ft.State.IsFinished() {
			out[i] = t.ft.Clone()
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

func (s *InMemoryStorage) CreateStudy(name string, dir studydata.Direction) (studydata.Direction, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, existed := s.state.createStudy(name, dir)
	return d, existed, nil
}

func (s *InMemoryStorage) StudyDirection(name string) (studydata.Direction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state.study(name)
	if err != nil {
		return 0, err
	}
	return st.dir, nil
}

func (s *InMemoryStorage) StartTrial(study string, plan studydata.StartPlan) (studydata.FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, attrs, err := s.state.plan(study, plan)
	if err != nil {
		return studydata.FrozenTrial{}, err
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
		return studydata.FrozenTrial{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if err := s.state.setSystemAttr(study, n, k, attrs[k]); err != nil {
			return studydata.FrozenTrial{}, err
		}
	}
	return st.trials[n].ft.Clone(), nil
}

func (s *InMemoryStorage) EnqueueTrial(study string, ft studydata.FrozenTrial) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.state.study(study)
	if err != nil {
		return 0, err
	}
	n := len(st.trials)
	ft.State = studydata.Waiting
	return n, s.state.addTrial(study, n, ft)
}

func (s *InMemoryStorage) SetParam(study string, number int, name string, x float64, d studydata.Distribution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setParam(study, number, name, x, d)
}

func (s *InMemoryStorage) SetUserAttr(study string, number int, key string, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setUserAttr(study, number, key, v)
}

func (s *InMemoryStorage) SetSystemAttr(study string, number int, key, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.setSystemAttr(study, number, key, v)
}

func (s *InMemoryStorage) FinishTrial(study string, number int, state studydata.TrialState, value float64, msg string, retries int) (studydata.FrozenTrial, *studydata.FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ft, err := s.state.finish(study, number, state, value, msg, time.Now(), false)
	if err != nil {
		return studydata.FrozenTrial{}, nil, err
	}
	r, err := s.state.enqueueRetry(study, ft, retries)
	return ft.Clone(), r, err
}

// enqueueRetry adds the retry of failed trial ft (retryOf), if any, and returns it.
func (m *memState) enqueueRetry(study string, ft studydata.FrozenTrial, retries int) (*studydata.FrozenTrial, error) {
	r, ok := studydata.RetryOf(ft, retries)
	if !ok {
		return nil, nil
	}
	st := m.studies[study]
	n := len(st.trials)
	if err := m.addTrial(study, n, r); err != nil {
		return nil, err
	}
	c := st.trials[n].ft.Clone()
	return &c, nil
}

func (s *InMemoryStorage) Trials(study string) ([]studydata.FrozenTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.trials(study)
}

// FailStale does nothing: every trial of an in-memory storage belongs to this process.
func (s *InMemoryStorage) FailStale(string, int) ([]studydata.StaleTrial, error) { return nil, nil }

// UnjudgedTrials returns none: every trial of an in-memory storage belongs
// to this process.
func (s *InMemoryStorage) UnjudgedTrials(study string) ([]studydata.UnjudgedTrial, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.state.study(study)
	return nil, err
}

func (s *InMemoryStorage) ImportStudy(name string, dir studydata.Direction, trials []studydata.FrozenTrial) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.importStudy(name, dir, trials)
}

// importStudy creates a study with trials given whole; on error the state
// is as it was.
func (m *memState) importStudy(name string, dir studydata.Direction, trials []studydata.FrozenTrial) error {
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
