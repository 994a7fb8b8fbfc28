package storages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gomase/gomase/mase/search/studydata"
)

// JournalStorage keeps studies in an append-only journal file: one JSON
// object per line, each recording one change (a study or trial created, a
// parameter or attribute set, a trial finished). Every append happens under
// an exclusive flock on the file, after replaying what other processes wrote,
// and is fsynced; so several worker processes on one machine may share a
// journal, and trial numbers, allocated under the lock, stay unique.
//
// A journal starts with the header line
// {"format":"gomase-search-journal","v":1}. A file is taken as a journal
// only if it starts with that line or (a journal written before the header)
// with a create_study record, or is empty; any other file is refused before
// anything is written to it.
//
// Opening a journal replays it, so a study created on an existing journal
// resumes: finished trials are kept, and trials whose process is gone are
// marked Fail (see NewStudy). A final line cut short by a crash is ignored
// with a warning and removed by the next append; other unreadable lines are
// skipped, counted in one warning.
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
	tail    int64 // bytes after offset without a final '\n'
	tailCut bool  // the tail can be a record cut short by a crash
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

// What a journal file may start with. gomase's journal is its own format
// (Optuna reads an export of it, not the journal), so a header line costs
// no compatibility.
const (
	// journalHeader is the first line of every journal gomase creates: it
	// marks the file as a journal before any study is in it.
	journalHeader = `{"format":"gomase-search-journal","v":1}`
	// legacyStart begins the first line of a journal written before the
	// header: the creation of its first study (json.Marshal writes "op"
	// and "study" first).
	legacyStart = `{"op":"create_study","study":`
	// recordStart begins every record.
	recordStart = `{"op":"`
	// maxHead bounds what is read of a file to recognise it.
	maxHead = 64 << 10
)

// prefixEither reports whether one of b and s is a prefix of the other.
func prefixEither(b []byte, s string) bool {
	n := min(len(b), len(s))
	return string(b[:n]) == s[:n]
}

// recogniseJournal checks head, the first bytes of a file of size bytes
// (all of them, or maxHead), and returns the length of the header line to
// skip (0 for a journal written before the header, or one whose first line
// was cut short), or an error saying what the file holds instead.
func recogniseJournal(path string, head []byte, size int64) (int64, error) {
	line, complete := head, false
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line, complete = head[:i], true
	}
	switch {
	case !complete && int64(len(head)) == size:
		// The whole file is one unterminated line: a journal whose first
		// write was cut short holds a beginning of its header, or of its
		// first record.
		if strings.HasPrefix(journalHeader, string(line)) || prefixEither(line, legacyStart) {
			return 0, nil
		}
	case !complete:
	case string(line) == journalHeader:
		return int64(len(line)) + 1, nil
	case isStudyCreation(line):
		return 0, nil
	}
	return 0, fmt.Errorf("search: %s is not a gomase study journal: it holds %s; give a journal gomase wrote, an empty file or a new file name (the file was left as it is)",
		path, describeContent(head))
}

// isStudyCreation reports whether line is a create_study record.
func isStudyCreation(line []byte) bool {
	var r struct {
		Op    string  `json:"op"`
		Study *string `json:"study"`
	}
	return json.Unmarshal(line, &r) == nil && r.Op == opCreateStudy && r.Study != nil
}

// describeContent says what a file that is not a journal holds, from its
// first bytes.
func describeContent(head []byte) string {
	valid := head
	if len(head) == maxHead { // the last character may be cut
		valid = head[:max(0, len(head)-utf8.UTFMax)]
	}
	if !utf8.Valid(valid) || bytes.ContainsFunc(head, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
	}) {
		return "binary data (a checkpoint, an archive or another binary file)"
	}
	line := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line = head[:i]
	}
	if json.Valid(line) {
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) == nil && m["op_code"] != nil {
			return "an Optuna journal (op_code records), which gomase imports (ImportOptunaJournal, mase search import) instead of opening"
		}
		return "JSON that is not a journal (its first line is neither the journal header nor a study's creation)"
	}
	return "text that is not a journal (its first line is neither the journal header nor a study's creation)"
}

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
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("search: open journal: %w", err)
		}
		return nil, fmt.Errorf("search: %s is not a regular file (%v); a journal is a file: give a journal gomase wrote, an empty file or a new file name", path, fi.Mode().Type())
	}
	j := &JournalStorage{path: path, logger: logger, f: f, state: newMemState(), warned: -1}
	if err := j.read(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// CreateJournal creates a journal at path, which must not exist yet,
// holding what fill records in it. fill gets the journal while it is a
// temporary file beside path (named .NAME.tmp-*); the file takes path's
// name only once fill has returned nil and ctx is not done, and is removed
// otherwise, so a failure leaves nothing at path. The journal is closed
// when CreateJournal returns.
func CreateJournal(ctx context.Context, path string, logger *slog.Logger, fill func(*JournalStorage) error) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("search: %s already exists; CreateJournal makes a new journal (open an existing one with OpenJournal)", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("search: creating journal %s: %w", path, err)
	}
	name := tmp.Name()
	tmp.Close()
	j, err := OpenJournal(name, logger)
	if err != nil {
		os.Remove(name)
		return err
	}
	j.path = path // what messages name
	defer func() {
		j.Close()
		if err != nil {
			os.Remove(name)
		}
	}()
	if err := fill(j); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("search: creating journal %s: %w; nothing was written", path, err)
	}
	if err := os.Chmod(name, 0o644); err != nil {
		return fmt.Errorf("search: creating journal %s: %w", path, err)
	}
	// A link, unlike a rename, never replaces a file that appeared at path
	// meanwhile.
	if err := os.Link(name, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("search: %s appeared while its journal was being made; it was left as it is and nothing was written", path)
		}
		// A file system without hard links.
		if _, serr := os.Lstat(path); serr == nil {
			return fmt.Errorf("search: %s appeared while its journal was being made; it was left as it is and nothing was written", path)
		}
		if err := os.Rename(name, path); err != nil {
			return fmt.Errorf("search: creating journal %s: %w", path, err)
		}
	} else {
		os.Remove(name)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // best effort: the journal itself is synced
		d.Close()
	}
	return nil
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
	return j.catchUpFrom(j.f, fi.Size())
}

// catchUpFrom replays the complete lines of r (the journal's size bytes)
// after j.offset. At offset 0 it first checks that r is a journal.
func (j *JournalStorage) catchUpFrom(r io.ReaderAt, size int64) error {
	if size < j.offset {
		return fmt.Errorf("journal %s shrank from %d to %d bytes; it was changed by something other than a JournalStorage", j.path, j.offset, size)
	}
	if j.offset == 0 && size > 0 {
		head, err := readAt(r, 0, min(size, maxHead))
		if err != nil {
			return fmt.Errorf("journal %s: read: %w", j.path, err)
		}
		skip, err := recogniseJournal(j.path, head, size)
		if err != nil {
			return err
		}
		if skip > 0 {
			j.offset, j.line = skip, 1
		}
	}
	if size == j.offset {
		j.tail = 0
		return nil
	}
	buf, err := readAt(r, j.offset, size-j.offset)
	if err != nil {
		return fmt.Errorf("journal %s: read: %w", j.path, err)
	}
	j.scan(buf)
	return nil
}

// readAt reads n bytes of r at off.
func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	buf := make([]byte, n)
	if got, err := r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && got == len(buf)) {
		return nil, err
	}
	return buf, nil
}

// scan replays the complete lines of buf, the journal from j.offset on,
// and keeps what follows the last newline as the tail. Skipped lines are
// reported in one warning.
func (j *JournalStorage) scan(buf []byte) {
	var unreadable, notApplying, firstLine int
	var firstErr error
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		j.line++
		readable, err := j.replay(buf[:i])
		if err != nil {
			if readable {
				notApplying++
			} else {
				unreadable++
			}
			if firstErr == nil {
				firstLine, firstErr = j.line, err
			}
		}
		buf = buf[i+1:]
		j.offset += int64(i + 1)
	}
	if firstErr != nil {
		j.logger.Warn("search: skipped journal lines that are unreadable or do not apply", "journal", j.path,
			"unreadable", unreadable, "not_applying", notApplying, "first_line", firstLine, "first_error", firstErr)
	}
	j.tail = int64(len(buf))
	j.tailCut = j.tail > 0 && j.cutShort(buf)
	if j.tail == 0 || j.warned == j.offset+j.tail {
		return
	}
	j.warned = j.offset + j.tail
	if j.tailCut {
		j.logger.Warn("search: journal ends with a cut-short record (a writer crashed mid-write); ignoring it, the next append removes it",
			"journal", j.path, "line", j.line+1, "offset", j.offset, "bytes", j.tail)
	} else {
		j.logger.Warn("search: journal ends with bytes that are not a record, without a final newline; ignoring them, and refusing to write until they are removed",
			"journal", j.path, "line", j.line+1, "offset", j.offset, "bytes", j.tail)
	}
}

// cutShort reports whether tail, the bytes after the journal's last
// newline, can be a record cut short by a crash: the beginning of what a
// writer appends there.
func (j *JournalStorage) cutShort(tail []byte) bool {
	if bytes.IndexByte(tail, '\n') >= 0 {
		return false
	}
	if j.offset == 0 {
		return strings.HasPrefix(journalHeader, string(tail)) || prefixEither(tail, legacyStart)
	}
	return prefixEither(tail, recordStart)
}

// replay applies one line to the state. It returns an error for a line that
// is skipped, and whether the line was a readable record.
func (j *JournalStorage) replay(line []byte) (readable bool, err error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return true, nil
	}
	var r journalRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return false, err
	}
	if err := j.apply(&r); err != nil {
		return true, fmt.Errorf("%s: %w", r.Op, err)
	}
	return true, nil
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
		dir, err := studydata.ParseDirection(r.Direction)
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
		d, err := studydata.UnmarshalDistribution(r.Dist)
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
		state, err := studydata.ParseTrialState(r.State)
		if err != nil {
			return err
		}
		value := 0.0
		if state == studydata.Complete {
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
func addTrialRecord(study string, number int, ft studydata.FrozenTrial) (*journalRecord, error) {
	r := &journalRecord{Op: opAddTrial, Study: study, Trial: &number, State: ft.State.String(), Message: ft.Message, Recovered: ft.Recovered}
	if !ft.Started.IsZero() {
		t := ft.Started
		r.Time = &t
	}
	if !ft.Finished.IsZero() {
		t := ft.Finished
		r.End = &t
	}
	if ft.State == studydata.Complete {
		vj, err := json.Marshal(ft.Value)
		if err != nil {
			return nil, fmt.Errorf("trial %d value %v: %w", number, ft.Value, err)
		}
		r.Value = vj
	}
	for _, name := range slices.Sorted(maps.Keys(ft.Distributions)) {
		dj, err := studydata.MarshalDistribution(ft.Distributions[name])
		if err != nil {
			return nil, fmt.Errorf("trial %d, parameter %q: %w", number, name, err)
		}
		r.Params = append(r.Params, journalParam{Name: name, Value: ft.InternalParams[name], Dist: dj})
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
func (r *journalRecord) trial() (studydata.FrozenTrial, error) {
	state, err := studydata.ParseTrialState(r.State)
	if err != nil {
		return studydata.FrozenTrial{}, err
	}
	ft := studydata.FrozenTrial{Number: *r.Trial, State: state, Value: math.NaN(), Message: r.Message, Recovered: r.Recovered,
		Distributions: map[string]studydata.Distribution{}, InternalParams: map[string]float64{},
		UserAttrs: map[string]any{}, SystemAttrs: maps.Clone(r.SystemAttrs)}
	if r.Time != nil {
		ft.Started = *r.Time
	}
	if r.End != nil {
		ft.Finished = *r.End
	}
	if state == studydata.Complete {
		if err := json.Unmarshal(r.Value, &ft.Value); err != nil {
			return studydata.FrozenTrial{}, fmt.Errorf("trial %d: value: %w", ft.Number, err)
		}
	}
	for _, p := range r.Params {
		d, err := studydata.UnmarshalDistribution(p.Dist)
		if err != nil {
			return studydata.FrozenTrial{}, fmt.Errorf("trial %d, parameter %q: distribution: %w", ft.Number, p.Name, err)
		}
		ft.Distributions[p.Name], ft.InternalParams[p.Name] = d, p.Value
	}
	for k, vj := range r.UserAttrs {
		var v any
		if err := json.Unmarshal(vj, &v); err != nil {
			return studydata.FrozenTrial{}, fmt.Errorf("trial %d, user attribute %q: %w", ft.Number, k, err)
		}
		ft.UserAttrs[k] = v
	}
	return ft, nil
}
