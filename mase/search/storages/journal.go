package storages

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomase/gomase/mase/filelock"

	"github.com/gomase/gomase/mase/limits"
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
	self   owner // this process; a test may make it claim another host

	beatMu sync.Mutex // serialises SetHeartbeat and Close

	mu     sync.Mutex
	f      *os.File
	state  *memState
	offset int64 // bytes replayed so far: just after a '\n', or after a complete record whose '\n' is missing
	// unterminated: the bytes before offset end with a complete record
	// whose final newline is missing; the next write adds it first.
	unterminated bool
	line         int   // lines replayed so far
	tail         int64 // bytes after offset without a final '\n' that are not a complete record
	tailCut      bool  // the tail can be a record cut short by a crash
	warned       int64 // offset+tail we last warned about, to warn once
	// skipped counts the lines that could not be read or did not apply,
	// and skippedFirst is the first of them (a message's hint).
	skipped, skippedFirst int
	broken                error // set when a write failed: the file and state may disagree
	closing               bool

	interval time.Duration     // heartbeat interval; 0: off
	mine     map[trialKey]bool // the Running trials this storage started, which its heartbeat keeps alive
	beats    *beatLoop         // the heartbeat loop, while one runs
}

// trialKey names a trial of a study.
type trialKey struct {
	study  string
	number int
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
	// HeartbeatMS is the heartbeat interval of a trial's worker, in
	// milliseconds (create_trial, start_trial, heartbeat; absent: none).
	HeartbeatMS int64 `json:"heartbeat_ms,omitempty"`
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
	opStartTrial = "start_trial"
	// opHeartbeat says that a running trial's worker is alive (see
	// SetHeartbeat).
	opHeartbeat    = "heartbeat"
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
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("search: open journal: %w", err)
		}
		return nil, fmt.Errorf("search: %s is not a regular file (%v); a journal is a file: give a journal gomase wrote, an empty file or a new file name", path, fi.Mode().Type())
	}
	if err := checkJournalSize(path, fi.Size()); err != nil {
		f.Close()
		return nil, err
	}
	j := &JournalStorage{path: path, logger: logger, self: selfOwner(), f: f, state: newMemState(), warned: -1}
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

// Close stops the heartbeat and closes the journal file. Trials still
// running are left Running; a later NewStudy on the journal marks them Fail
// once this process is gone (from another machine: once their heartbeat is
// stale).
func (j *JournalStorage) Close() error {
	j.beatMu.Lock()
	defer j.beatMu.Unlock()
	j.mu.Lock()
	beats := j.beats
	j.beats = nil
	j.mu.Unlock()
	beats.stop()
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
	if err := filelock.Flock(j.f, false); err != nil {
		return fmt.Errorf("journal %s: lock: %w", j.path, err)
	}
	defer filelock.Unlock(j.f)
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
// after j.offset, reading them one at a time. At offset 0 it first checks
// that r is a journal.
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
	if err := j.scan(io.NewSectionReader(r, j.offset, size-j.offset)); err != nil {
		return fmt.Errorf("journal %s: read: %w", j.path, err)
	}
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

// lineReader reads the lines of a journal one at a time, each up to a
// bound: a longer line is consumed without being kept.
type lineReader struct {
	br  *bufio.Reader
	buf []byte // reused for lines longer than br's buffer
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its '\n' (valid until the next call),
// the bytes it took (n, with the '\n'), whether it ended with a '\n'
// (false: the last bytes, or n == 0 at the end), and whether it was longer
// than the bound (then line holds its first bytes only).
func (lr *lineReader) next() (line []byte, n int64, ended, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	for first := true; ; first = false {
		chunk, err := lr.br.ReadSlice('\n')
		n += int64(len(chunk))
		if first && err == nil && len(chunk)-1 <= lr.max {
			return chunk[:len(chunk)-1], n, true, false, nil // the usual case: no copy
		}
		if keep := lr.max + 1 - len(lr.buf); keep > 0 {
			lr.buf = append(lr.buf, chunk[:min(keep, len(chunk))]...)
		}
		switch {
		case err == nil:
			line = bytes.TrimSuffix(lr.buf, []byte{'\n'})
			return line, n, true, n-1 > int64(lr.max), nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return lr.buf, n, false, n > int64(lr.max), nil
		default:
			return nil, n, false, false, err
		}
	}
}

// scan replays the lines of r, the journal from j.offset on. A last line
// without its newline is replayed too when it is a complete record (a
// crash cut only its newline, which the next write adds); otherwise it is
// kept as the tail. Skipped lines, and complete trials whose value is not a
// finite number (read as failed), are reported in one warning each.
func (j *JournalStorage) scan(r io.Reader) error {
	lr := newLineReader(r, maxJournalLine)
	if j.unterminated {
		b, err := lr.br.Peek(1)
		switch {
		case err == nil: // something was appended after the record
			j.unterminated = false
			if b[0] == '\n' {
				lr.br.Discard(1)
				j.offset++
			}
		case !errors.Is(err, io.EOF):
			return err
		}
	}
	var unreadable, notApplying, firstLine int
	var firstErr error
	var badValues []string
	skip := func(readable bool, err error) {
		if readable {
			notApplying++
		} else {
			unreadable++
		}
		if firstErr == nil {
			firstLine, firstErr = j.line, err
		}
		if j.skipped == 0 {
			j.skippedFirst = j.line
		}
		j.skipped++
	}
	replay := func(line []byte, tooLong bool) {
		j.line++
		if tooLong {
			skip(false, fmt.Errorf("the line is longer than the %s a record may be", limits.Bytes(int64(maxJournalLine))))
			return
		}
		readable, bad, err := j.replay(line)
		if err != nil {
			skip(readable, err)
		}
		if bad != "" {
			badValues = append(badValues, bad)
		}
	}
	j.tail, j.tailCut = 0, false
	for {
		line, n, ended, tooLong, err := lr.next()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if ended {
			replay(line, tooLong)
			j.offset += n
			continue
		}
		// The last bytes, without a newline.
		switch {
		case !tooLong && j.offset == 0 && string(line) == journalHeader:
			j.line++
			j.offset += n
			j.unterminated = true
		case !tooLong && isCompleteRecord(line):
			replay(line, false)
			j.offset += n
			j.unterminated = true
			if j.warned != j.offset {
				j.warned = j.offset
				j.logger.Warn("search: journal ends with a complete record without its final newline (a writer crashed as it wrote it); the record is read, and the next write adds the newline",
					"journal", j.path, "line", j.line)
			}
		default:
			j.tail = n
			j.tailCut = !tooLong && j.cutShort(line)
		}
		break
	}
	if firstErr != nil {
		j.logger.Warn("search: skipped journal lines that are unreadable or do not apply", "journal", j.path,
			"unreadable", unreadable, "not_applying", notApplying, "first_line", firstLine, "first_error", firstErr)
	}
	if len(badValues) > 0 {
		j.logger.Warn("search: trials recorded as complete with a value that is not a finite number are read as failed; they take no part in the search",
			"journal", j.path, "trials", badValues)
	}
	if j.tail == 0 || j.warned == j.offset+j.tail {
		return nil
	}
	j.warned = j.offset + j.tail
	if j.tailCut {
		j.logger.Warn("search: journal ends with a cut-short record (a writer crashed mid-write); ignoring it, the next append removes it",
			"journal", j.path, "line", j.line+1, "offset", j.offset, "bytes", j.tail)
	} else {
		j.logger.Warn("search: journal ends with bytes that are not a record, without a final newline; ignoring them, and refusing to write until they are removed",
			"journal", j.path, "line", j.line+1, "offset", j.offset, "bytes", j.tail)
	}
	return nil
}

// isCompleteRecord reports whether line, the journal's last bytes, is a
// whole record: a crash cut the newline after it, not the record itself
// (a record cut short is never valid JSON, since its object closes at its
// last byte).
func isCompleteRecord(line []byte) bool {
	return bytes.HasPrefix(line, []byte(recordStart)) && json.Valid(line)
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
// is skipped, whether the line was a readable record, and, for a complete
// trial whose value is not a finite number (read as failed), a note naming it.
func (j *JournalStorage) replay(line []byte) (readable bool, bad string, err error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return true, "", nil
	}
	var r journalRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return false, "", err
	}
	bad, err = j.apply(&r)
	if err != nil {
		return true, "", fmt.Errorf("%s: %w", r.Op, err)
	}
	return true, bad, nil
}

// badValue is the message of a trial recorded as complete with value raw,
// which is not a finite number, and the note that names it in a warning.
func badValue(study string, number int, raw []byte) (msg, note string) {
	v := string(raw)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	if v == "" {
		v = "(none)"
	}
	msg = fmt.Sprintf("recorded as complete with value %s, which is not a finite number; read as failed", v)
	return msg, fmt.Sprintf("study %s trial %d value %s", printable(study), number, v) // v is JSON: no raw control characters
}

// finiteValue reads the value of a complete trial's record; ok is false
// when it is missing, not a number or not finite.
func finiteValue(raw json.RawMessage) (float64, bool) {
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// apply changes the state as record r says; it validates first, so an error
// leaves the state unchanged. A trial recorded as complete with a value
// that is not a finite number is recorded as failed, and bad names it.
func (j *JournalStorage) apply(r *journalRecord) (bad string, err error) {
	m := j.state
	if r.Op != opCreateStudy && r.Trial == nil {
		return "", fmt.Errorf("record %q has no trial number", r.Op)
	}
	when := time.Time{}
	if r.Time != nil {
		when = *r.Time
	}
	switch r.Op {
	case opCreateStudy:
		dir, err := studydata.ParseDirection(r.Direction)
		if err != nil {
			return "", err
		}
		if old, existed := m.createStudy(r.Study, dir); existed && old != dir {
			return "", fmt.Errorf("study %q is already recorded with direction %v; ignoring a second creation with %v", r.Study, old, dir)
		}
		return "", nil
	case opCreateTrial, opStartTrial:
		var o owner
		if r.Owner != nil {
			o = *r.Owner
		}
		if r.HeartbeatMS < 0 {
			return "", fmt.Errorf("heartbeat interval %d ms is negative", r.HeartbeatMS)
		}
		if r.Op == opCreateTrial {
			err = m.createTrial(r.Study, *r.Trial, when, o)
		} else {
			err = m.start(r.Study, *r.Trial, when, o)
		}
		if err != nil {
			return "", err
		}
		return "", m.heartbeat(r.Study, *r.Trial, when, r.HeartbeatMS)
	case opHeartbeat:
		return "", m.heartbeat(r.Study, *r.Trial, when, r.HeartbeatMS)
	case opSetParam:
		var x float64
		if err := json.Unmarshal(r.Value, &x); err != nil {
			return "", fmt.Errorf("parameter %q: value: %w", r.Name, err)
		}
		d, err := studydata.UnmarshalDistribution(r.Dist)
		if err != nil {
			return "", fmt.Errorf("parameter %q: distribution: %w", r.Name, err)
		}
		return "", m.setParam(r.Study, *r.Trial, r.Name, x, d)
	case opSetUserAttr:
		var v any
		if len(r.Value) > 0 {
			if err := json.Unmarshal(r.Value, &v); err != nil {
				return "", fmt.Errorf("user attribute %q: %w", r.Name, err)
			}
		}
		return "", m.setUserAttr(r.Study, *r.Trial, r.Name, v)
	case opSetSystemAttr:
		var v string
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return "", fmt.Errorf("system attribute %q: %w", r.Name, err)
		}
		return "", m.setSystemAttr(r.Study, *r.Trial, r.Name, v)
	case opFinishTrial:
		state, err := studydata.ParseTrialState(r.State)
		if err != nil {
			return "", err
		}
		value, msg := 0.0, r.Message
		if state == studydata.Complete {
			var ok bool
			if value, ok = finiteValue(r.Value); !ok {
				state, value = studydata.Fail, math.NaN()
				msg, bad = badValue(r.Study, *r.Trial, r.Value)
			}
		}
		if _, err = m.finish(r.Study, *r.Trial, state, value, msg, when, r.Recovered); err != nil {
			return "", err
		}
		return bad, nil
	case opAddTrial:
		ft, bad, err := r.trial()
		if err != nil {
			return "", err
		}
		if err := m.addTrial(r.Study, *r.Trial, ft); err != nil {
			return "", err
		}
		return bad, nil
	}
	return "", fmt.Errorf("unknown operation %q (allowed: %s, %s, %s, %s, %s, %s, %s, %s, %s)", r.Op,
		opCreateStudy, opCreateTrial, opSetParam, opSetUserAttr, opSetSystemAttr, opFinishTrial, opAddTrial, opStartTrial, opHeartbeat)
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

// trial decodes the trial of an add_trial record; one recorded as
// complete with a value that is not a finite number is failed, and bad
// names it.
func (r *journalRecord) trial() (ft studydata.FrozenTrial, bad string, err error) {
	state, err := studydata.ParseTrialState(r.State)
	if err != nil {
		return studydata.FrozenTrial{}, "", err
	}
	ft = studydata.FrozenTrial{Number: *r.Trial, State: state, Value: math.NaN(), Message: r.Message, Recovered: r.Recovered,
		Distributions: map[string]studydata.Distribution{}, InternalParams: map[string]float64{},
		UserAttrs: map[string]any{}, SystemAttrs: maps.Clone(r.SystemAttrs)}
	if r.Time != nil {
		ft.Started = *r.Time
	}
	if r.End != nil {
		ft.Finished = *r.End
	}
	if state == studydata.Complete {
		v, ok := finiteValue(r.Value)
		if ok {
			ft.Value = v
		} else {
			ft.State = studydata.Fail
			ft.Message, bad = badValue(r.Study, ft.Number, r.Value)
		}
	}
	for _, p := range r.Params {
		d, err := studydata.UnmarshalDistribution(p.Dist)
		if err != nil {
			return studydata.FrozenTrial{}, "", fmt.Errorf("trial %d, parameter %q: distribution: %w", ft.Number, p.Name, err)
		}
		ft.Distributions[p.Name], ft.InternalParams[p.Name] = d, p.Value
	}
	for k, vj := range r.UserAttrs {
		var v any
		if err := json.Unmarshal(vj, &v); err != nil {
			return studydata.FrozenTrial{}, "", fmt.Errorf("trial %d, user attribute %q: %w", ft.Number, k, err)
		}
		ft.UserAttrs[k] = v
	}
	return ft, bad, nil
}
