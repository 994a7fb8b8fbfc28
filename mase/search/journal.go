package search

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"sync"
	"time"
)

// JournalStorage keeps studies in an append-only journal file: one JSON
// object per line, each recording one change (a study or trial created, a
// parameter or attribute set, a trial finished). Every append happens under
// an exclusive flock on the file, after replaying what other processes wrote,
// and is fsynced; so several worker processes on one machine may share a
// journal, and trial numbers, allocated under the lock, stay unique.
//
// Opening a journal replays it, so a study created on an existing journal
// resumes: finished trials are kept, and trials whose process is gone are
// marked Fail (see NewStudy). A final line cut short by a crash is ignored
// with a warning and removed by the next append; any other unreadable line is
// skipped with a warning.
//
// A JournalStorage is safe for concurrent use by several goroutines.
type JournalStorage struct {
	path   string
	logger *slog.Logger

	mu      sync.Mutex
	f       *os.File
	state   *memState
	offset  int64 // bytes replayed so far; always just after a '\n'
	line    int   // lines replayed so far
	tail    int64 // bytes after offset without a final '\n' (a cut-short record)
	warned  int64 // offset+tail we last warned about, to warn once
	broken  error // set when a write failed: the file and state may disagree
	closing bool
}

// journalRecord is one line of the journal.
type journalRecord struct {
	Op        string          `json:"op"`
	Study     string          `json:"study"`
	Trial     *int            `json:"trial,omitempty"`
	Version   int             `json:"v,omitempty"`
	Direction string          `json:"direction,omitempty"`
	Name      string          `json:"name,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	Dist      json.RawMessage `json:"dist,omitempty"`
	State     string          `json:"state,omitempty"`
	Message   string          `json:"message,omitempty"`
	Recovered bool            `json:"recovered,omitempty"`
	Time      *time.Time      `json:"time,omitempty"`
	Owner     *owner          `json:"owner,omitempty"`
	// A trial given whole (add_trial): its end, parameters and attributes.
	End         *time.Time                 `json:"end,omitempty"`
	Params      []journalParam             `json:"params,omitempty"`
	UserAttrs   map[string]json.RawMessage `json:"user_attrs,omitempty"`
	SystemAttrs map[string]string          `json:"system_attrs,omitempty"`
}

// journalParam is a parameter of a trial given whole.
type journalParam struct {
	Name  string          `json:"name"`
	Value float64         `json:"value"`
	Dist  json.RawMessage `json:"dist"`
}

// Journal record operations.
const (
	opCreateStudy   = "create_study"
	opCreateTrial   = "create_trial"
	opSetParam      = "set_param"
	opSetUserAttr   = "set_user_attr"
	opSetSystemAttr = "set_system_attr"
	opFinishTrial   = "finish_trial"
	// opAddTrial records a trial given whole: an enqueued (waiting) one, a
	// retry, or an imported one.
	opAddTrial = "add_trial"
	// opStartTrial makes a waiting trial running.
	opStartTrial   = "start_trial"
	journalVersion = 1
)

// OpenJournal opens (creating it if needed) the journal file at path and
// replays it. Warnings (a cut-short final record, unreadable lines) go to
// logger, or to slog.Default() when logger is nil. Close the storage when done.
func OpenJournal(path string, logger *slog.Logger) (*JournalStorage, error) {
	if logger == nil {
		logger = slog.Default()
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("search: open journal: %w", err)
	}
	j := &JournalStorage{path: path, logger: logger, f: f, state: newMemState(), warned: -1}
	if err := j.read(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// Path returns the journal's file name.
func (j *JournalStorage) Path() string { return j.path }

// String returns the journal's file name.
func (j *JournalStorage) String() string { return j.path }

// Close closes the journal file. Trials still running are left Running; a
// later NewStudy on the journal marks them Fail once this process is gone.
func (j *JournalStorage) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closing {
		return nil
	}
	j.closing = true
	return j.f.Close()
}

func (j *JournalStorage) usable() error {
	if j.closing {
		return fmt.Errorf("journal %s is closed", j.path)
	}
	if j.broken != nil {
		return fmt.Errorf("journal %s is unusable after a failed write (reopen it): %w", j.path, j.broken)
	}
	return nil
}

// read replays what other processes appended, under a shared lock.
func (j *JournalStorage) read() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	if err := flock(j.f, false); err != nil {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	defer funlock(j.f)
	return j.catchUp()
}

// catchUp replays the complete lines after j.offset. The caller holds j.mu
// and a file lock, so no writer is midway through a line: an unterminated
// final line is a record cut short by a crash.
func (j *JournalStorage) catchUp() error {
	fi, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	size := fi.Size()
	if size < j.offset {
		return fmt.Errorf("journal %s shrank from %d to %d bytes; it was changed by something other than a JournalStorage", j.path, j.offset, size)
	}
	if size == j.offset {
		j.tail = 0
		return nil
	}
	buf := make([]byte, size-j.offset)
	if n, err := j.f.ReadAt(buf, j.offset); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return fmt.Errorf("journal %s: read: %w", j.path, err)
	}
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		j.line++
		j.replay(buf[:i])
		buf = buf[i+1:]
		j.offset += int64(i + 1)
	}
	j.tail = int64(len(buf))
	if j.tail > 0 && j.warned != j.offset+j.tail {
		j.warned = j.offset + j.tail
		j.logger.Warn("search: journal ends with a cut-short record (a writer crashed mid-write); ignoring it, the next append removes it",
			"journal", j.path, "line", j.line+1, "offset", j.offset, "bytes", j.tail)
	}
	return nil
}

// replay applies one line to the state; bad lines are skipped with a warning.
func (j *JournalStorage) replay(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var r journalRecord
	if err := json.Unmarshal(line, &r); err != nil {
		j.logger.Warn("search: skipping an unreadable journal line", "journal", j.path, "line", j.line, "error", err)
		return
	}
	if err := j.apply(&r); err != nil {
		j.logger.Warn("search: skipping a journal record that does not apply", "journal", j.path, "line", j.line, "op", r.Op, "error", err)
	}
}

// apply changes the state as record r says; it validates first, so an error
// leaves the state unchanged.
func (j *JournalStorage) apply(r *journalRecord) error {
	m := j.state
	if r.Op != opCreateStudy && r.Trial == nil {
		return fmt.Errorf("record %q has no trial number", r.Op)
	}
	when := time.Time{}
	if r.Time != nil {
		when = *r.Time
	}
	switch r.Op {
	case opCreateStudy:
		dir, err := ParseDirection(r.Direction)
		if err != nil {
			return err
		}
		if old, existed := m.createStudy(r.Study, dir); existed && old != dir {
			return fmt.Errorf("study %q is already recorded with direction %v; ignoring a second creation with %v", r.Study, old, dir)
		}
		return nil
	case opCreateTrial:
		var o owner
		if r.Owner != nil {
			o = *r.Owner
		}
		return m.createTrial(r.Study, *r.Trial, when, o)
	case opSetParam:
		var x float64
		if err := json.Unmarshal(r.Value, &x); err != nil {
			return fmt.Errorf("parameter %q: value: %w", r.Name, err)
		}
		d, err := unmarshalDist(r.Dist)
		if err != nil {
			return fmt.Errorf("parameter %q: distribution: %w", r.Name, err)
		}
		return m.setParam(r.Study, *r.Trial, r.Name, x, d)
	case opSetUserAttr:
		var v any
		if len(r.Value) > 0 {
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return fmt.Errorf("user attribute %q: %w", r.Name, err)
			}
		}
		return m.setUserAttr(r.Study, *r.Trial, r.Name, v)
	case opSetSystemAttr:
		var v string
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("system attribute %q: %w", r.Name, err)
		}
		return m.setSystemAttr(r.Study, *r.Trial, r.Name, v)
	case opFinishTrial:
		state, err := parseState(r.State)
		if err != nil {
			return err
		}
		value := 0.0
		if state == Complete {
			if err := json.Unmarshal(r.Value, &value); err != nil {
				return fmt.Errorf("trial %d: value: %w", *r.Trial, err)
			}
		}
		_, err = m.finish(r.Study, *r.Trial, state, value, r.Message, when, r.Recovered)
		return err
	case opAddTrial:
		ft, err := r.trial()
		if err != nil {
			return err
		}
		return m.addTrial(r.Study, *r.Trial, ft)
	case opStartTrial:
		var o owner
		if r.Owner != nil {
			o = *r.Owner
		}
		return m.start(r.Study, *r.Trial, when, o)
	}
	return fmt.Errorf("unknown operation %q (allowed: %s, %s, %s, %s, %s, %s, %s, %s)", r.Op,
		opCreateStudy, opCreateTrial, opSetParam, opSetUserAttr, opSetSystemAttr, opFinishTrial, opAddTrial, opStartTrial)
}

// addTrialRecord is the add_trial record of a trial given whole.
func addTrialRecord(study string, number int, ft FrozenTrial) (*journalRecord, error) {
	r := &journalRecord{Op: opAddTrial, Study: study, Trial: &number, State: ft.State.String(), Message: ft.Message, Recovered: ft.recovered}
	if !ft.Started.IsZero() {
		t := ft.Started
		r.Time = &t
	}
	if !ft.Finished.IsZero() {
		t := ft.Finished
		r.End = &t
	}
	if ft.State == Complete {
		vj, err := json.Marshal(ft.Value)
		if err != nil {
			return nil, fmt.Errorf("trial %d value %v: %w", number, ft.Value, err)
		}
		r.Value = vj
	}
	for _, name := range sortedKeys(ft.Distributions) {
		dj, err := marshalDist(ft.Distributions[name])
		if err != nil {
			return nil, fmt.Errorf("trial %d, parameter %q: %w", number, name, err)
		}
		r.Params = append(r.Params, journalParam{Name: name, Value: ft.internal[name], Dist: dj})
	}
	if len(ft.UserAttrs) > 0 {
		r.UserAttrs = map[string]json.RawMessage{}
		for k, v := range ft.UserAttrs {
			vj, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("trial %d: user attribute %q must be JSON-encodable; %T is not: %w", number, k, v, err)
			}
			r.UserAttrs[k] = vj
		}
	}
	if len(ft.SystemAttrs) > 0 {
		r.SystemAttrs = maps.Clone(ft.SystemAttrs)
	}
	return r, nil
}

// trial decodes the trial of an add_trial record.
func (r *journalRecord) trial() (FrozenTrial, error) {
	state, err := parseState(r.State)
	if err != nil {
		return FrozenTrial{}, err
	}
	ft := FrozenTrial{Number: *r.Trial, State: state, Value: math.NaN(), Message: r.Message, recovered: r.Recovered,
		Distributions: map[string]Distribution{}, internal: map[string]float64{},
		UserAttrs: map[string]any{}, SystemAttrs: maps.Clone(r.SystemAttrs)}
	if r.Time != nil {
		ft.Started = *r.Time
	}
	if r.End != nil {
		ft.Finished = *r.End
	}
	if state == Complete {
		if err := json.Unmarshal(r.Value, &ft.Value); err != nil {
			return FrozenTrial{}, fmt.Errorf("trial %d: value: %w", ft.Number, err)
		}
	}
	for _, p := range r.Params {
		d, err := unmarshalDist(p.Dist)
		if err != nil {
			return FrozenTrial{}, fmt.Errorf("trial %d, parameter %q: distribution: %w", ft.Number, p.Name, err)
		}
		ft.Distributions[p.Name], ft.internal[p.Name] = d, p.Value
	}
	for k, vj := range r.UserAttrs {
		var v any
		if err := json.Unmarshal(vj, &v); err != nil {
			return FrozenTrial{}, fmt.Errorf("trial %d, user attribute %q: %w", ft.Number, k, err)
		}
		ft.UserAttrs[k] = v
	}
	return ft, nil
}

// update runs fn under the exclusive file lock, after replaying what others
// appended and removing a cut-short final record. fn calls emit for each
// record to append: emit applies it to the state (which validates it) and
// then appends it to the file and fsyncs.
func (j *JournalStorage) update(fn func(emit func(*journalRecord) error) error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return err
	}
	if err := flock(j.f, true); err != nil {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	defer funlock(j.f)
	if err := j.catchUp(); err != nil {
		return err
	}
	if j.tail > 0 {
		if err := j.f.Truncate(j.offset); err != nil {
			return fmt.Errorf("journal %s: removing a cut-short final record: %w", j.path, err)
		}
		j.logger.Warn("search: removed a cut-short final journal record", "journal", j.path, "offset", j.offset, "bytes", j.tail)
		j.tail = 0
	}
	// The records fn emits are applied at once and written together, in one
	// write and one fsync, when fn returns (even with an error: those
	// emitted were applied), so that a change of several records (a trial
	// and its system attributes, a failure and its retry) is not split
	// by a crash of this process.
	var buf []byte
	lines := 0
	emit := func(r *journalRecord) error {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := j.apply(r); err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
		lines++
		return nil
	}
	ferr := fn(emit)
	if len(buf) == 0 {
		return ferr
	}
	if _, err := j.f.Write(buf); err != nil {
		j.broken = err
		return fmt.Errorf("journal %s: write: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		j.broken = err
		return fmt.Errorf("journal %s: fsync: %w", j.path, err)
	}
	j.offset += int64(len(buf))
	j.line += lines
	return ferr
}

func (j *JournalStorage) createStudy(name string, dir Direction) (Direction, bool, error) {
	var got Direction
	var existed bool
	err := j.update(func(emit func(*journalRecord) error) error {
		if s, ok := j.state.studies[name]; ok {
			got, existed = s.dir, true
			return nil
		}
		now := time.Now()
		got = dir
		return emit(&journalRecord{Op: opCreateStudy, Study: name, Version: journalVersion, Direction: dir.String(), Time: &now})
	})
	return got, existed, err
}

func (j *JournalStorage) studyDirection(name string) (Direction, error) {
	if err := j.read(); err != nil {
		return 0, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	st, err := j.state.study(name)
	if err != nil {
		return 0, err
	}
	return st.dir, nil
}

func (j *JournalStorage) startTrial(study string, plan startPlan) (FrozenTrial, error) {
	var ft FrozenTrial
	now := time.Now()
	err := j.update(func(emit func(*journalRecord) error) error {
		w, attrs, err := j.state.plan(study, plan)
		if err != nil {
			return err
		}
		o := selfOwner()
		number := len(j.state.studies[study].trials)
		if w != nil {
			number = w.ft.Number
			err = emit(&journalRecord{Op: opStartTrial, Study: study, Trial: &number, Time: &now, Owner: &o})
		} else {
			err = emit(&journalRecord{Op: opCreateTrial, Study: study, Trial: &number, Time: &now, Owner: &o})
		}
		if err != nil {
			return err
		}
		for _, k := range sortedKeys(attrs) {
			vj, _ := json.Marshal(attrs[k])
			if err := emit(&journalRecord{Op: opSetSystemAttr, Study: study, Trial: &number, Name: k, Value: vj}); err != nil {
				return err
			}
		}
		ft = j.state.studies[study].trials[number].ft.clone()
		return nil
	})
	return ft, err
}

func (j *JournalStorage) enqueueTrial(study string, ft FrozenTrial) (int, error) {
	var number int
	err := j.update(func(emit func(*journalRecord) error) error {
		s, err := j.state.study(study)
		if err != nil {
			return err
		}
		number = len(s.trials)
		ft.State = Waiting
		r, err := addTrialRecord(study, number, ft)
		if err != nil {
			return err
		}
		return emit(r)
	})
	return number, err
}

// emitRetry emits the add_trial record of the retry of failed trial ft, if any.
func (j *JournalStorage) emitRetry(emit func(*journalRecord) error, study string, ft FrozenTrial, retries int) (*FrozenTrial, error) {
	r, ok := retryOf(ft, retries)
	if !ok {
		return nil, nil
	}
	number := len(j.state.studies[study].trials)
	rec, err := addTrialRecord(study, number, r)
	if err != nil {
		return nil, err
	}
	if err := emit(rec); err != nil {
		return nil, err
	}
	c := j.state.studies[study].trials[number].ft.clone()
	return &c, nil
}

func (j *JournalStorage) importStudy(name string, dir Direction, trials []FrozenTrial) error {
	return j.update(func(emit func(*journalRecord) error) error {
		if _, ok := j.state.studies[name]; ok {
			return fmt.Errorf("study %q already exists in the storage; import it under another name or into another storage", name)
		}
		// Validate everything first: a record that does not apply would
		// leave half a study in the journal.
		recs := make([]*journalRecord, 0, len(trials))
		for i, ft := range trials {
			ft.Number = i
			if err := checkAdded(&ft); err != nil {
				return err
			}
			r, err := addTrialRecord(name, i, normalizeAdded(ft))
			if err != nil {
				return err
			}
			recs = append(recs, r)
		}
		now := time.Now()
		if err := emit(&journalRecord{Op: opCreateStudy, Study: name, Version: journalVersion, Direction: dir.String(), Time: &now}); err != nil {
			return err
		}
		for _, r := range recs {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (j *JournalStorage) setParam(study string, number int, name string, x float64, d Distribution) error {
	dj, err := marshalDist(d)
	if err != nil {
		return fmt.Errorf("journal %s cannot store parameter %q: %w", j.path, name, err)
	}
	xj, err := json.Marshal(x)
	if err != nil {
		return err
	}
	return j.update(func(emit func(*journalRecord) error) error {
		return emit(&journalRecord{Op: opSetParam, Study: study, Trial: &number, Name: name, Value: xj, Dist: dj})
	})
}

func (j *JournalStorage) setUserAttr(study string, number int, key string, v any) error {
	vj, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal %s needs JSON-encodable user attributes; %T is not: %w", j.path, v, err)
	}
	return j.update(func(emit func(*journalRecord) error) error {
		return emit(&journalRecord{Op: opSetUserAttr, Study: study, Trial: &number, Name: key, Value: vj})
	})
}

func (j *JournalStorage) setSystemAttr(study string, number int, key, v string) error {
	vj, _ := json.Marshal(v)
	return j.update(func(emit func(*journalRecord) error) error {
		return emit(&journalRecord{Op: opSetSystemAttr, Study: study, Trial: &number, Name: key, Value: vj})
	})
}

func (j *JournalStorage) finishTrial(study string, number int, state TrialState, value float64, msg string, retries int) (FrozenTrial, *FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return FrozenTrial{}, nil, err
	}
	var ft FrozenTrial
	var retry *FrozenTrial
	now := time.Now()
	err := j.update(func(emit func(*journalRecord) error) error {
		r := &journalRecord{Op: opFinishTrial, Study: study, Trial: &number, State: state.String(), Message: msg, Time: &now}
		if state == Complete {
			vj, err := json.Marshal(value)
			if err != nil {
				return fmt.Errorf("trial %d value %v: %w", number, value, err)
			}
			r.Value = vj
		}
		if err := emit(r); err != nil {
			return err
		}
		ft = j.state.studies[study].trials[number].ft.clone()
		var err error
		retry, err = j.emitRetry(emit, study, ft, retries)
		return err
	})
	return ft, retry, err
}

func (j *JournalStorage) trials(study string) ([]FrozenTrial, error) {
	if err := j.read(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state.trials(study)
}

// failStale marks Fail, with a record saying why, every Running trial of the
// study whose process on this machine is gone.
func (j *JournalStorage) failStale(study string, retries int) ([]staleTrial, error) {
	var failed []staleTrial
	err := j.update(func(emit func(*journalRecord) error) error {
		s, err := j.state.study(study)
		if err != nil {
			return err
		}
		self := selfOwner()
		for _, t := range s.trials {
			if t.ft.State != Running {
				continue
			}
			if alive, known := t.owner.alive(); alive || !known {
				continue
			}
			now := time.Now()
			number := t.ft.Number
			msg := fmt.Sprintf("the process that ran this trial (%v) is gone: it crashed or was killed; marked failed by %v", t.owner, self)
			if err := emit(&journalRecord{Op: opFinishTrial, Study: study, Trial: &number, State: Fail.String(),
				Message: msg, Recovered: true, Time: &now}); err != nil {
				return err
			}
			r, err := j.emitRetry(emit, study, t.ft, retries)
			if err != nil {
				return err
			}
			st := staleTrial{number: number, retry: -1}
			if r != nil {
				st.retry = r.Number
			}
			failed = append(failed, st)
		}
		return nil
	})
	return failed, err
}
