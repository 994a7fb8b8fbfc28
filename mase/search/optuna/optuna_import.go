package optuna

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/search/studydata"
)

// Import describes what ImportJournal imported.
type Import struct {
	// Study is the name of the study created.
	Study string
	// Direction is its direction.
	Direction studydata.Direction
	// Trials counts the trials imported, by state.
	Trials map[studydata.TrialState]int
	// Notes says what was changed on the way: running trials imported as
	// failed, infinite values, intermediate values dropped.
	Notes []string
}

// ImportJournal reads an Optuna journal (JournalFileStorage, Optuna
// 3.1 or later) from r and creates its study named name in st ("": the
// journal's only study), under the name as ("": the same), holding its trials with their numbers, states,
// values, parameters (with their distributions), times and attributes, so
// that a gomase study of that name goes on with it (its next trial has the
// next number). The study must not exist in st yet; it is created in one
// change. The journal is replayed as Optuna replays it; a last line cut
// short is ignored. What gomase cannot hold is changed, and said in Notes:
// a trial still running (whose worker Optuna's journal cannot track) is
// imported as failed; a complete trial with an infinite value as failed;
// intermediate values are dropped. Waiting trials stay waiting, with their
// fixed_params. Multi-objective studies are refused.
func ImportJournal(st studydata.Storage, r io.Reader, name, as string) (imp Import, err error) {
	defer func() {
		if err != nil {
			err = oneLineError{err}
		}
	}()
	j, err := replayOptunaJournal(r)
	if err != nil {
		return Import{}, err
	}
	s, err := j.pick(name)
	if err != nil {
		return Import{}, err
	}
	imp = Import{Study: s.name, Trials: map[studydata.TrialState]int{}}
	if as != "" {
		imp.Study = as
	}
	if imp.Study == "" {
		return imp, errors.New(`search: import: the study's name is "" (empty), which no gomase command can name; give it one with --as NAME (Import's as)`)
	}
	for _, n := range slices.Sorted(maps.Keys(j.adjusted)) {
		imp.Notes = append(imp.Notes, j.adjusted[n])
	}
	if len(s.directions) != 1 {
		return imp, fmt.Errorf("search: import: study %q has %d objectives; a gomase study has one (minimize or maximize)", s.name, len(s.directions))
	}
	switch s.directions[0] {
	case ojMinimize:
		imp.Direction = studydata.Minimize
	case ojMaximize:
		imp.Direction = studydata.Maximize
	default:
		return imp, fmt.Errorf("search: import: study %q has direction %d (allowed: 1 minimize, 2 maximize)", s.name, s.directions[0])
	}
	trials := make([]studydata.FrozenTrial, len(s.trials))
	intermediate := 0
	for i, id := range s.trials {
		t := j.trials[id]
		ft, err := t.frozen(&imp)
		if err != nil {
			return imp, fmt.Errorf("search: import: study %q, trial %d: %w", s.name, t.number, err)
		}
		intermediate += len(t.intermediate)
		trials[i] = ft
		imp.Trials[ft.State]++
	}
	if intermediate > 0 {
		imp.Notes = append(imp.Notes, fmt.Sprintf("%d intermediate values (trial.report) dropped: gomase records none", intermediate))
	}
	if err := st.ImportStudy(imp.Study, imp.Direction, trials); err != nil {
		return imp, fmt.Errorf("search: import: %w", err)
	}
	return imp, nil
}

// oneLineError is an import error whose text, which quotes what the
// journal holds, is kept on one line and free of terminal escapes: its
// control characters are written as escapes (\n, \x1b).
type oneLineError struct{ err error }

func (e oneLineError) Error() string {
	msg := e.err.Error()
	if !strings.ContainsFunc(msg, isControl) {
		return msg
	}
	var b strings.Builder
	for _, r := range msg {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (e oneLineError) Unwrap() error { return e.err }

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// ojStudy and ojTrial are a study and a trial as a replay builds them.
type ojStudy struct {
	name string
	// rawName is the study_name as the journal holds it; badName says why
	// it cannot be a gomase name (not a string), "" when it can.
	rawName    any
	badName    string
	directions []int
	trials     []int // trial ids, in number order
	// firstWith is, for each parameter name, the position in trials of the
	// first trial that has it: the distribution Optuna checks a new one of
	// that name against.
	firstWith map[string]int
}

// noteParam records that the trial at position pos has parameter name.
func (s *ojStudy) noteParam(name string, pos int) {
	if first, ok := s.firstWith[name]; !ok || pos < first {
		s.firstWith[name] = pos
	}
}

type ojTrial struct {
	study, number   int
	pos             int // position in its study's trials
	state           int
	values          []float64
	start, complete time.Time
	params          map[string]float64
	dists           map[string]studydata.Distribution
	userAttrs       map[string]any
	systemAttrs     map[string]any
	intermediate    map[string]float64
}

func (t *ojTrial) finished() bool {
	return t.state == ojComplete || t.state == ojPruned || t.state == ojFail
}

type ojJournal struct {
	studies map[int]*ojStudy // existing (not deleted) studies by id
	order   []int            // their ids in creation order
	trials  []*ojTrial       // every created trial, by trial id
	names   map[string]int   // the ids of existing studies, by nameKey
	nextID  int
	// adjusted holds a note for each distribution whose high was moved onto
	// its step grid, as Optuna moves it (by its JSON text).
	adjusted map[string]string
	// compared counts the earlier trials looked at to check parameter
	// distributions (a test's count that replay stays linear).
	compared int
}

// pick returns the study named name, or the only one when name is "". A
// study whose journal name is not a string is refused when it would be
// picked.
func (j *ojJournal) pick(name string) (*ojStudy, error) {
	var names []string
	var only *ojStudy
	for _, id := range j.order {
		if s, ok := j.studies[id]; ok {
			if name != "" && s.badName == "" && s.name == name {
				return s, nil
			}
			names = append(names, s.label())
			only = s
		}
	}
	switch {
	case len(names) == 0:
		return nil, errors.New("search: import: the journal holds no study")
	case name != "":
		return nil, fmt.Errorf("search: import: the journal has no study %q (it has %s)", name, strings.Join(names, ", "))
	case len(names) > 1:
		return nil, fmt.Errorf("search: import: the journal holds %d studies (%s); name the one to import", len(names), strings.Join(names, ", "))
	}
	if only.badName != "" {
		return nil, fmt.Errorf("search: import: the journal's study is named by %s, not a string; Optuna and gomase name studies by strings, and no command could name it (rewrite its study_name as a JSON string)", only.badName)
	}
	return only, nil
}

// label names a study in a list of the journal's studies.
func (s *ojStudy) label() string {
	if s.badName != "" {
		return s.badName + " (not a string)"
	}
	return strconv.Quote(s.name)
}

// nameKey is a study_name as a map key: its JSON type and value, so that
// the string "1" and the number 1 are two names, as in Optuna.
func nameKey(v any) string { return fmt.Sprintf("%T:%v", v, v) }

// describeName says what a study_name that is not a string is.
func describeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "the number " + x.String()
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if f, ok := ojFloat(v); ok {
		return fmt.Sprintf("the number %v", f)
	}
	return fmt.Sprintf("%T", v)
}

// Bounds of an Optuna journal: the file (checked before it is opened, by
// the caller that opens it) and each line, checked as it is read.
var (
	// JournalFile bounds the size of an Optuna journal to import.
	JournalFile = limits.File{What: "an Optuna journal", Max: 512 << 20}
	// maxLine is the longest line an import reads.
	maxLine = 16 << 20
)

// replayOptunaJournal replays the lines of a journal as Optuna 3.1 does,
// reading one line at a time, each at most maxLine bytes, and at most
// JournalFile.Max bytes in all.
func replayOptunaJournal(r io.Reader) (*ojJournal, error) {
	j := &ojJournal{studies: map[int]*ojStudy{}, names: map[string]int{}, adjusted: map[string]string{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	var total int64
	var pending error // the decoding error of a line, fatal unless it was the last
	for n := 1; ; n++ {
		buf = buf[:0]
		ended := false
		for {
			chunk, err := br.ReadSlice('\n')
			total += int64(len(chunk))
			if total > JournalFile.Max {
				return nil, fmt.Errorf("search: import: the journal is longer than the %s allowed for %s", limits.Bytes(JournalFile.Max), JournalFile.What)
			}
			if len(buf)+len(chunk) > maxLine+1 {
				return nil, fmt.Errorf("search: import: line %d is longer than the %s a journal line may be", n, limits.Bytes(int64(maxLine)))
			}
			buf = append(buf, chunk...)
			if err == nil {
				ended = true
				break
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				return nil, fmt.Errorf("search: import: reading line %d: %w", n, err)
			}
		}
		line := bytes.TrimSuffix(buf, []byte{'\n'})
		if len(bytes.TrimSpace(line)) > 0 {
			if pending != nil {
				return nil, pending
			}
			op, err := decodeOptunaLine(line)
			if err != nil {
				// Fatal unless nothing but blank lines follows: a last line cut
				// short by a crash, which Optuna ignores too.
				pending = fmt.Errorf("search: import: line %d is not JSON: %w", n, err)
			} else if err := j.apply(op); err != nil {
				return nil, fmt.Errorf("search: import: line %d: %w", n, err)
			}
		}
		if !ended {
			return j, nil
		}
	}
}

// ojNaN, ojInf and ojNegInf stand for Python's NaN, Infinity and -Infinity
// tokens while encoding/json reads a line.
const (
	ojNaN    = "\x00NaN"
	ojInf    = "\x00Infinity"
	ojNegInf = "\x00-Infinity"
)

// decodeOptunaLine decodes one line, numbers as json.Number, Python's
// non-finite tokens as the strings above.
func decodeOptunaLine(line []byte) (map[string]any, error) {
	var fixed []byte
	inString, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			if fixed != nil {
				fixed = append(fixed, c)
			}
			continue
		}
		token := ""
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(line[i:], []byte("NaN")):
			token = "NaN"
		case bytes.HasPrefix(line[i:], []byte("Infinity")):
			token = "Infinity"
		case bytes.HasPrefix(line[i:], []byte("-Infinity")):
			token = "-Infinity"
		}
		if token == "" {
			if fixed != nil {
				fixed = append(fixed, c)
			}
			continue
		}
		if fixed == nil {
			fixed = append([]byte{}, line[:i]...)
		}
		js, _ := json.Marshal("\x00" + token)
		fixed = append(fixed, js...)
		i += len(token) - 1
	}
	if fixed != nil {
		line = fixed
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var op map[string]any
	if err := d.Decode(&op); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	return op, nil
}

// ojFloat reads a float: a JSON number or one of Python's tokens.
func ojFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string:
		switch x {
		case ojNaN:
			return math.NaN(), true
		case ojInf:
			return math.Inf(1), true
		case ojNegInf:
			return math.Inf(-1), true
		}
	}
	return 0, false
}

// ojInt reads an integer (Optuna may write it as 3 or 3.0).
func ojInt(v any) (int, bool) {
	f, ok := ojFloat(v)
	if !ok || f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// ojPlain turns a decoded JSON value into plain Go: numbers as float64
// (Python's tokens included), objects and lists recursively.
func ojPlain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case string:
		if f, ok := ojFloat(x); ok {
			return f
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ojPlain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ojPlain(e)
		}
		return out
	}
	return v
}

// ojTime reads an Optuna datetime: naive (local time, as Optuna 3.1 writes
// it) or with an offset (as Optuna 5 writes it).
func ojTime(v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, fmt.Errorf("datetime %v is not a string", v)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("datetime %q is not in ISO 8601 form", s)
}

// oneAttr reads the {key: value} of an attribute operation.
func oneAttr(v any) (string, any, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", nil, fmt.Errorf("attribute %v is not an object of one key", v)
	}
	for k, x := range m {
		return k, x, nil
	}
	return "", nil, nil
}

// apply replays one operation. Operations Optuna ignores (on a missing
// study or trial, on a finished trial) are ignored.
func (j *ojJournal) apply(op map[string]any) error {
	code, ok := ojInt(op["op_code"])
	if !ok {
		return fmt.Errorf("op_code %v is not an integer", op["op_code"])
	}
	trial := func() *ojTrial {
		id, ok := ojInt(op["trial_id"])
		if !ok || id < 0 || id >= len(j.trials) {
			return nil
		}
		t := j.trials[id]
		if _, live := j.studies[t.study]; !live || t.finished() {
			return nil
		}
		return t
	}
	switch code {
	case ojCreateStudy:
		raw := op["study_name"]
		key := nameKey(raw)
		if _, exists := j.names[key]; exists {
			return nil // Optuna refuses a second study of a name
		}
		s := &ojStudy{rawName: raw, firstWith: map[string]int{}}
		if name, ok := raw.(string); ok {
			s.name = name
		} else {
			s.badName = describeName(raw)
		}
		dirs, _ := op["directions"].([]any)
		for _, d := range dirs {
			di, ok := ojInt(d)
			if !ok {
				return fmt.Errorf("study %s: direction %v is not an integer", s.label(), d)
			}
			s.directions = append(s.directions, di)
		}
		j.names[key] = j.nextID
		j.studies[j.nextID] = s
		j.order = append(j.order, j.nextID)
		j.nextID++
	case ojDeleteStudy:
		if id, ok := ojInt(op["study_id"]); ok {
			if s, live := j.studies[id]; live {
				delete(j.names, nameKey(s.rawName))
				delete(j.studies, id)
			}
		}
	case ojSetStudyUserAttr, ojSetStudySystemAttr, ojDiscardTrials:
		// Study attributes have no place in gomase; DISCARD_TRIALS is
		// skipped as Optuna skips it.
	case ojCreateTrial:
		sid, ok := ojInt(op["study_id"])
		s, live := j.studies[sid]
		if !ok || !live {
			return nil
		}
		t := &ojTrial{study: sid, number: len(s.trials), pos: len(s.trials), state: ojRunning, params: map[string]float64{},
			dists: map[string]studydata.Distribution{}, userAttrs: map[string]any{}, systemAttrs: map[string]any{}}
		if v, ok := op["state"]; ok {
			if t.state, ok = ojInt(v); !ok || t.state < ojRunning || t.state > ojWaiting {
				return fmt.Errorf("trial state %v (allowed: 0 running, 1 complete, 2 pruned, 3 fail, 4 waiting)", v)
			}
		}
		var err error
		if v := op["datetime_start"]; v != nil {
			if t.start, err = ojTime(v); err != nil {
				return err
			}
		}
		if v := op["datetime_complete"]; v != nil {
			if t.complete, err = ojTime(v); err != nil {
				return err
			}
		}
		if err := t.setValues(op["value"], op["values"]); err != nil {
			return err
		}
		if dm, ok := op["distributions"].(map[string]any); ok {
			for name, dj := range dm {
				d, err := j.distribution(name, dj)
				if err != nil {
					return err
				}
				t.dists[name] = d
			}
		}
		if pm, ok := op["params"].(map[string]any); ok {
			for name, pv := range pm {
				x, ok := ojFloat(pv)
				if !ok {
					return fmt.Errorf("parameter %q: value %v is not a number", name, pv)
				}
				if _, ok := t.dists[name]; !ok {
					return fmt.Errorf("parameter %q has no distribution", name)
				}
				t.params[name] = x
				s.noteParam(name, t.pos)
			}
		}
		if um, ok := op["user_attrs"].(map[string]any); ok {
			for k, v := range um {
				t.userAttrs[k] = v
			}
		}
		if sm, ok := op["system_attrs"].(map[string]any); ok {
			for k, v := range sm {
				t.systemAttrs[k] = v
			}
		}
		if im, ok := op["intermediate_values"].(map[string]any); ok {
			t.intermediate = map[string]float64{}
			for k, v := range im {
				t.intermediate[k], _ = ojFloat(v)
			}
		}
		j.trials = append(j.trials, t)
		s.trials = append(s.trials, len(j.trials)-1)
	case ojSetTrialParam:
		t := trial()
		if t == nil {
			return nil
		}
		name, _ := op["param_name"].(string)
		d, err := j.distribution(name, op["distribution"])
		if err != nil {
			return err
		}
		x, ok := ojFloat(op["param_value_internal"])
		if !ok {
			return fmt.Errorf("parameter %q: value %v is not a number", name, op["param_value_internal"])
		}
		// Optuna drops a parameter whose distribution does not match that of
		// the study's first trial that has one of that name.
		s := j.studies[t.study]
		if first, ok := s.firstWith[name]; ok {
			j.compared++
			if !optunaCompatible(j.trials[s.trials[first]].dists[name], d) {
				return nil
			}
		}
		t.params[name], t.dists[name] = x, d
		s.noteParam(name, t.pos)
	case ojSetTrialStateValue:
		t := trial()
		if t == nil {
			return nil
		}
		state, ok := ojInt(op["state"])
		if !ok || state < ojRunning || state > ojWaiting {
			return fmt.Errorf("trial state %v (allowed: 0 running, 1 complete, 2 pruned, 3 fail, 4 waiting)", op["state"])
		}
		if state == ojRunning && t.state == ojRunning {
			return nil // another worker started it first
		}
		var err error
		switch {
		case state == ojRunning:
			t.start, err = ojTime(op["datetime_start"])
		case state != ojWaiting:
			t.complete, err = ojTime(op["datetime_complete"])
		}
		if err != nil {
			return err
		}
		t.state = state
		if op["values"] != nil {
			if err := t.setValues(nil, op["values"]); err != nil {
				return err
			}
		}
	case ojSetTrialInterValue:
		if t := trial(); t != nil {
			if t.intermediate == nil {
				t.intermediate = map[string]float64{}
			}
			v, _ := ojFloat(op["intermediate_value"])
			t.intermediate[fmt.Sprint(op["step"])] = v
		}
	case ojSetTrialUserAttr, ojSetTrialSystemAttr:
		t := trial()
		if t == nil {
			return nil
		}
		field, attrs := "user_attr", t.userAttrs
		if code == ojSetTrialSystemAttr {
			field, attrs = "system_attr", t.systemAttrs
		}
		k, v, err := oneAttr(op[field])
		if err != nil {
			return err
		}
		attrs[k] = v
	default:
		return fmt.Errorf("unknown op_code %d (Optuna 3.1 to 4.x write 0 to 9)", code)
	}
	return nil
}
