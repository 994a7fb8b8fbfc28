package storages

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/filelock"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/search/studydata"
)

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
	if err := filelock.Flock(j.f, true); err != nil {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	defer filelock.Unlock(j.f)
	if err := j.catchUp(); err != nil {
		return err
	}
	if j.tail > 0 {
		if !j.tailCut {
			return fmt.Errorf("search: journal %s ends with %d bytes after its last newline that are not a cut-short record; "+
				"not writing (only a cut-short record is removed; remove those bytes by hand if they are not wanted)", j.path, j.tail)
		}
		if err := j.f.Truncate(j.offset); err != nil {
			return fmt.Errorf("journal %s: removing a cut-short final record: %w", j.path, err)
		}
		j.logger.Warn("search: removed a cut-short final journal record", "journal", j.path, "offset", j.offset, "bytes", j.tail)
		j.tail, j.tailCut = 0, false
	}
	// The records fn emits are applied at once and written together, in one
	// write and one fsync, when fn returns (even with an error: those
	// emitted were applied), so that a change of several records (a trial
	// and its system attributes, a failure and its retry) is not split
	// by a crash of this process.
	var buf []byte
	lines := 0
	switch {
	case j.offset == 0: // an empty file: the header goes first
		buf = append(buf, journalHeader+"\n"...)
		lines++
	case j.unterminated: // the last record lacks its newline
		buf = append(buf, '\n')
	}
	records := 0
	emit := func(r *journalRecord) error {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if len(line) > maxJournalLine {
			return fmt.Errorf("journal %s cannot hold a record of %s (%s, trial %d): a record may take at most %s; keep large values in files and record their names",
				j.path, limits.Bytes(int64(len(line))), r.Op, derefTrial(r.Trial), limits.Bytes(int64(maxJournalLine)))
		}
		if _, err := j.apply(r); err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
		lines++
		records++
		return nil
	}
	ferr := fn(emit)
	if records == 0 {
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
	if j.unterminated {
		j.unterminated = false
		j.logger.Warn("search: added the missing newline after the journal's last record", "journal", j.path, "line", j.line-lines)
	}
	return ferr
}

// derefTrial is a record's trial number, or -1 when it has none.
func derefTrial(n *int) int {
	if n == nil {
		return -1
	}
	return *n
}

func (j *JournalStorage) CreateStudy(name string, dir studydata.Direction) (studydata.Direction, bool, error) {
	var got studydata.Direction
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

func (j *JournalStorage) StudyDirection(name string) (studydata.Direction, error) {
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

func (j *JournalStorage) StartTrial(study string, plan studydata.StartPlan) (studydata.FrozenTrial, error) {
	var ft studydata.FrozenTrial
	now := time.Now()
	err := j.update(func(emit func(*journalRecord) error) error {
		w, attrs, err := j.state.plan(study, plan)
		if err != nil {
			return err
		}
		o := j.self
		number := len(j.state.studies[study].trials)
		op := opCreateTrial
		if w != nil {
			number, op = w.ft.Number, opStartTrial
		}
		if err := emit(&journalRecord{Op: op, Study: study, Trial: &number, Time: &now, Owner: &o, HeartbeatMS: j.heartbeatMS()}); err != nil {
			return err
		}
		if j.mine == nil {
			j.mine = map[trialKey]bool{}
		}
		j.mine[trialKey{study, number}] = true
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			vj, _ := json.Marshal(attrs[k])
			if err := emit(&journalRecord{Op: opSetSystemAttr, Study: study, Trial: &number, Name: k, Value: vj}); err != nil {
				return err
			}
		}
		ft = j.state.studies[study].trials[number].ft.Clone()
		return nil
	})
	return ft, err
}

func (j *JournalStorage) EnqueueTrial(study string, ft studydata.FrozenTrial) (int, error) {
	var number int
	err := j.update(func(emit func(*journalRecord) error) error {
		s, err := j.state.study(study)
		if err != nil {
			return err
		}
		number = len(s.trials)
		ft.State = studydata.Waiting
		r, err := addTrialRecord(study, number, ft)
		if err != nil {
			return err
		}
		return emit(r)
	})
	return number, err
}

// emitRetry emits the add_trial record of the retry of failed trial ft, if any.
func (j *JournalStorage) emitRetry(emit func(*journalRecord) error, study string, ft studydata.FrozenTrial, retries int) (*studydata.FrozenTrial, error) {
	r, ok := studydata.RetryOf(ft, retries)
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
	c := j.state.studies[study].trials[number].ft.Clone()
	return &c, nil
}

func (j *JournalStorage) ImportStudy(name string, dir studydata.Direction, trials []studydata.FrozenTrial) error {
	return j.update(func(emit func(*journalRecord) error) error {
		if _, ok := j.state.studies[name]; ok {
			return fmt.Errorf("study %q already exists in the storage; import it under another name or into another storage", name)
		}
		// Validate everything first, on a scratch state: a record that
		// does not apply would leave half a study in the journal.
		now := time.Now()
		recs := []*journalRecord{{Op: opCreateStudy, Study: name, Version: journalVersion, Direction: dir.String(), Time: &now}}
		for i, ft := range trials {
			ft.Number = i
			if err := studydata.CheckAdded(&ft); err != nil {
				return err
			}
			r, err := addTrialRecord(name, i, studydata.NormalizeAdded(ft))
			if err != nil {
				return err
			}
			recs = append(recs, r)
		}
		scratch := &JournalStorage{path: j.path, state: newMemState()}
		for _, r := range recs {
			if _, err := json.Marshal(r); err != nil {
				return err
			}
			if _, err := scratch.apply(r); err != nil {
				return err
			}
		}
		for _, r := range recs {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (j *JournalStorage) SetParam(study string, number int, name string, x float64, d studydata.Distribution) error {
	dj, err := studydata.MarshalDistribution(d)
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

func (j *JournalStorage) SetUserAttr(study string, number int, key string, v any) error {
	vj, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("journal %s needs JSON-encodable user attributes; %T is not: %w", j.path, v, err)
	}
	return j.update(func(emit func(*journalRecord) error) error {
		return emit(&journalRecord{Op: opSetUserAttr, Study: study, Trial: &number, Name: key, Value: vj})
	})
}

func (j *JournalStorage) SetSystemAttr(study string, number int, key, v string) error {
	vj, _ := json.Marshal(v)
	return j.update(func(emit func(*journalRecord) error) error {
		return emit(&journalRecord{Op: opSetSystemAttr, Study: study, Trial: &number, Name: key, Value: vj})
	})
}

func (j *JournalStorage) FinishTrial(study string, number int, state studydata.TrialState, value float64, msg string, retries int) (studydata.FrozenTrial, *studydata.FrozenTrial, error) {
	if err := checkFinish(number, state, value); err != nil {
		return studydata.FrozenTrial{}, nil, err
	}
	var ft studydata.FrozenTrial
	var retry *studydata.FrozenTrial
	now := time.Now()
	err := j.update(func(emit func(*journalRecord) error) error {
		r := &journalRecord{Op: opFinishTrial, Study: study, Trial: &number, State: state.String(), Message: msg, Time: &now}
		if state == studydata.Complete {
			vj, err := json.Marshal(value)
			if err != nil {
				return fmt.Errorf("trial %d value %v: %w", number, value, err)
			}
			r.Value = vj
		}
		if err := emit(r); err != nil {
			return err
		}
		delete(j.mine, trialKey{study, number})
		ft = j.state.studies[study].trials[number].ft.Clone()
		var err error
		retry, err = j.emitRetry(emit, study, ft, retries)
		return err
	})
	return ft, retry, err
}

func (j *JournalStorage) Trials(study string) ([]studydata.FrozenTrial, error) {
	if err := j.read(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state.trials(study)
}

// FailStale marks Fail, with a record saying why, every Running trial of the
// study whose worker is gone (see staleReason): on this machine its process
// has exited; from another machine, its heartbeat has stopped.
func (j *JournalStorage) FailStale(study string, retries int) ([]studydata.StaleTrial, error) {
	var failed []studydata.StaleTrial
	err := j.update(func(emit func(*journalRecord) error) error {
		s, err := j.state.study(study)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, t := range s.trials {
			if t.ft.State != studydata.Running {
				continue
			}
			msg, _ := j.staleReason(t, now)
			if msg == "" {
				continue
			}
			number := t.ft.Number
			if err := emit(&journalRecord{Op: opFinishTrial, Study: study, Trial: &number, State: studydata.Fail.String(),
				Message: msg, Recovered: true, Time: &now}); err != nil {
				return err
			}
			delete(j.mine, trialKey{study, number})
			r, err := j.emitRetry(emit, study, t.ft, retries)
			if err != nil {
				return err
			}
			st := studydata.StaleTrial{Number: number, Retry: -1}
			if r != nil {
				st.Retry = r.Number
			}
			failed = append(failed, st)
		}
		return nil
	})
	return failed, err
}

// staleReason says why the Running trial t is to be marked Fail at now, or
// returns "" to leave it; judged is false when this process can tell
// neither (see UnjudgedTrials). On the trial's machine its process is looked
// up; otherwise a trial whose worker beats is failed once its last
// heartbeat is older than the grace of its interval, both by the time the
// worker recorded and by the time this process has been reading the
// journal since it saw that beat (so a worker whose clock is behind is not
// failed early).
func (j *JournalStorage) staleReason(t *trialRec, now time.Time) (msg string, judged bool) {
	o := t.owner
	if alive, known := o.aliveFrom(j.self); known {
		if alive {
			return "", true
		}
		return fmt.Sprintf("the process that ran this trial (%v) is gone: it crashed or was killed; marked failed by %v", o, j.self), true
	}
	if t.beatMS <= 0 {
		return "", false
	}
	interval := time.Duration(t.beatMS) * time.Millisecond
	grace := heartbeatGrace(interval)
	silent := now.Sub(t.beat)
	if silent <= grace || now.Sub(t.seen) <= grace {
		return "", true
	}
	return fmt.Sprintf("the process that ran this trial (%v) sent no heartbeat for %v (one was due every %v): it crashed, was killed or lost the journal; marked failed by %v",
		o, silent.Round(time.Millisecond), interval, j.self), true
}

// UnjudgedTrials returns the Running trials whose worker this process can
// tell neither alive nor dead: on another machine (or none recorded) and
// without a heartbeat. When the journal has lines that could not be read,
// the reason says that a lost finish record may be among them.
func (j *JournalStorage) UnjudgedTrials(study string) ([]studydata.UnjudgedTrial, error) {
	if err := j.read(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	s, err := j.state.study(study)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []studydata.UnjudgedTrial
	for _, t := range s.trials {
		if t.ft.State != studydata.Running {
			continue
		}
		if _, judged := j.staleReason(t, now); judged {
			continue
		}
		why := unjudgedWhy(t.owner, j.self)
		if j.skipped > 0 {
			why += fmt.Sprintf("; the journal has %d line(s) that could not be read (the first is line %d): if one was this trial's finish record, its result is lost",
				j.skipped, j.skippedFirst)
		}
		out = append(out, studydata.UnjudgedTrial{Number: t.ft.Number, Owner: ownerName(t.owner), Why: why})
	}
	return out, nil
}

// heartbeatMS is the heartbeat interval to record with a trial, in
// milliseconds; 0 when off. The caller holds j.mu.
func (j *JournalStorage) heartbeatMS() int64 {
	if j.interval <= 0 {
		return 0
	}
	return max(j.interval.Milliseconds(), 1)
}

// SetHeartbeat makes the journal record a heartbeat for each Running trial
// this storage started every interval (interval ≤ 0 turns it off, the
// default), and records the interval with them and with the trials started
// later. A process on another machine sharing the journal (a file system
// both mount: containers sharing a volume, say) then marks such a trial
// Fail once its worker has sent no heartbeat for longer than
// heartbeatGrace(interval) — two intervals and a margin of one more, at most
// 10 s — as PostgresStorage.SetHeartbeat does. On the trial's own machine its
// process is looked up instead. Trials whose worker sends no heartbeat are
// never failed from another machine (UnjudgedTrials lists them). The
// machines' clocks need not agree: a beat is judged late only once this
// process too has been reading the journal for the grace without a newer
// one. Each beat appends one line per running trial.
func (j *JournalStorage) SetHeartbeat(interval time.Duration) error {
	interval = max(interval, 0)
	j.beatMu.Lock()
	defer j.beatMu.Unlock()
	j.mu.Lock()
	if j.closing {
		j.mu.Unlock()
		return fmt.Errorf("journal %s is closed", j.path)
	}
	beats := j.beats
	j.beats = nil
	j.interval = interval
	j.mu.Unlock()
	beats.stop()
	if err := j.beat(); err != nil { // record the new interval now
		return err
	}
	if interval > 0 {
		loop := startBeatLoop(interval, func(context.Context) error { return j.beat() }, func(err error) {
			j.logger.Warn("search: journal heartbeat failed; workers on other machines may mark this worker's running trials failed",
				"journal", j.path, "error", err)
		})
		j.mu.Lock()
		j.beats = loop
		j.mu.Unlock()
	}
	return nil
}

// beat appends a heartbeat record for each Running trial this storage
// started, with the current interval (0: none, recorded only when it was on).
func (j *JournalStorage) beat() error {
	return j.update(func(emit func(*journalRecord) error) error {
		now := time.Now()
		ms := j.heartbeatMS()
		keys := slices.SortedFunc(maps.Keys(j.mine), func(a, b trialKey) int {
			if c := strings.Compare(a.study, b.study); c != 0 {
				return c
			}
			return a.number - b.number
		})
		for _, k := range keys {
			s := j.state.studies[k.study]
			if s == nil || k.number >= len(s.trials) || s.trials[k.number].ft.State != studydata.Running {
				delete(j.mine, k) // finished, or failed by another worker
				continue
			}
			if ms == 0 && s.trials[k.number].beatMS == 0 {
				continue
			}
			number := k.number
			if err := emit(&journalRecord{Op: opHeartbeat, Study: k.study, Trial: &number, Time: &now, HeartbeatMS: ms}); err != nil {
				return err
			}
		}
		return nil
	})
}
