package storages

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

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
	if err := flock(j.f, true); err != nil {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	defer funlock(j.f)
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
	if j.offset == 0 { // an empty file: the header goes first
		buf = append(buf, journalHeader+"\n"...)
		lines++
	}
	records := 0
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
	return ferr
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
			if err := scratch.apply(r); err != nil {
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
// study whose process on this machine is gone.
func (j *JournalStorage) FailStale(study string, retries int) ([]studydata.StaleTrial, error) {
	var failed []studydata.StaleTrial
	err := j.update(func(emit func(*journalRecord) error) error {
		s, err := j.state.study(study)
		if err != nil {
			return err
		}
		self := selfOwner()
		for _, t := range s.trials {
			if t.ft.State != studydata.Running {
				continue
			}
			if alive, known := t.owner.alive(); alive || !known {
				continue
			}
			now := time.Now()
			number := t.ft.Number
			msg := fmt.Sprintf("the process that ran this trial (%v) is gone: it crashed or was killed; marked failed by %v", t.owner, self)
			if err := emit(&journalRecord{Op: opFinishTrial, Study: study, Trial: &number, State: studydata.Fail.String(),
				Message: msg, Recovered: true, Time: &now}); err != nil {
				return err
			}
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
