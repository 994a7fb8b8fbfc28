package search

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Optuna's JournalFileStorage format (Optuna 3.1, unchanged to 4.x): one
// JSON object per line, each an operation {"op_code": N, "worker_id": W, …}.
// Studies and trials are numbered implicitly, in the order their creation
// lines appear. ExportOptunaJournal writes a study as one CREATE_STUDY line
// and one self-contained CREATE_TRIAL line per trial (what Optuna's
// study.add_trial writes); ImportOptunaJournal replays a journal as Optuna
// does, whatever operations it holds.

// Optuna journal operation codes (JournalOperation).
const (
	ojCreateStudy        = 0
	ojDeleteStudy        = 1
	ojSetStudyUserAttr   = 2
	ojSetStudySystemAttr = 3
	ojCreateTrial        = 4
	ojSetTrialParam      = 5
	ojSetTrialStateValue = 6
	ojSetTrialInterValue = 7
	ojSetTrialUserAttr   = 8
	ojSetTrialSystemAttr = 9
	ojDiscardTrials      = 10 // Optuna 5 (from Rustuna); skipped
)

// Optuna's TrialState and StudyDirection values.
const (
	ojRunning, ojComplete, ojPruned, ojFail, ojWaiting = 0, 1, 2, 3, 4
	ojMinimize, ojMaximize                             = 1, 2
)

// System attributes gomase writes for what Optuna has no field for.
const (
	// optunaFailReason holds the message of a failed trial (Optuna 2's name).
	optunaFailReason = "fail_reason"
	// optunaGomasePrefix marks gomase's own system attributes in an export
	// (the grid's, the message of a pruned trial, a crash recovery), which
	// Optuna's samplers must not take for theirs (its GridSampler reads
	// grid_id); an import removes it.
	optunaGomasePrefix = "gomase:"
	// optunaPrefix marks, in gomase, the system attributes of an imported
	// Optuna trial that gomase does not use, kept as JSON text; an export
	// writes them back under their own names.
	optunaPrefix = "optuna:"
)

// optunaTime is Optuna 3.1's datetime form: naive local time, microseconds.
const optunaTime = "2006-01-02T15:04:05.000000"

// ExportOptunaJournal writes study of storage st to w in Optuna's
// JournalFileStorage format, so that Optuna (3.1 and later), its plots and
// optuna-dashboard can load it: one CREATE_STUDY line, then one complete
// CREATE_TRIAL line per trial, in number order (so that the trial numbers
// are kept). Parameters keep their distributions (Float, Int, Categorical;
// log and step); failed_trial, retry_history and fixed_params are written
// as Optuna's JSON values; the message of a failed trial becomes the
// system attribute fail_reason, and gomase's other system attributes are
// written with the prefix "gomase:". Running trials are written as RUNNING.
// It returns the number of trials written.
func ExportOptunaJournal(st Storage, study string, w io.Writer) (int, error) {
	dir, err := st.studyDirection(study)
	if err != nil {
		return 0, fmt.Errorf("search: export: %w", err)
	}
	ts, err := st.trials(study)
	if err != nil {
		return 0, fmt.Errorf("search: export: %w", err)
	}
	worker := optunaWorkerID()
	bw := bufio.NewWriter(w)
	var b pyJSON
	direction := ojMinimize
	if dir == Maximize {
		direction = ojMaximize
	}
	b.object(func() {
		b.field("op_code", ojCreateStudy)
		b.field("worker_id", worker)
		b.field("study_name", study)
		b.field("directions", []any{direction})
	})
	b.buf.WriteByte('\n')
	bw.Write(b.take())
	for _, t := range ts {
		line, err := exportTrial(&b, worker, t)
		if err != nil {
			return 0, fmt.Errorf("search: export of study %q, trial %d: %w", study, t.Number, err)
		}
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("search: export: %w", err)
	}
	return len(ts), nil
}

// optunaWorkerID is a worker_id for the lines gomase writes.
func optunaWorkerID() string {
	r := make([]byte, 8)
	rand.Read(r)
	return fmt.Sprintf("gomase-%s-%d", hex.EncodeToString(r), os.Getpid())
}

// exportTrial returns the CREATE_TRIAL line of trial t.
func exportTrial(b *pyJSON, worker string, t FrozenTrial) ([]byte, error) {
	state := map[TrialState]int{Running: ojRunning, Complete: ojComplete, Pruned: ojPruned, Fail: ojFail, Waiting: ojWaiting}[t.State]
	names := sortedKeys(t.Distributions)
	dists := make([]string, len(names))
	params := make([]any, len(names))
	for i, name := range names {
		dj, x, err := optunaDistribution(t.Distributions[name], t.internal[name])
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", name, err)
		}
		dists[i], params[i] = dj, x
	}
	userAttrs, err := optunaUserAttrs(t.UserAttrs)
	if err != nil {
		return nil, err
	}
	sysNames, sysValues := optunaSystemAttrs(t)
	b.object(func() {
		b.field("op_code", ojCreateTrial)
		b.field("worker_id", worker)
		b.field("study_id", 0)
		if t.Started.IsZero() || t.State == Waiting {
			b.field("datetime_start", nil)
		} else {
			b.field("datetime_start", t.Started.Local().Format(optunaTime))
		}
		b.field("state", state)
		if t.State == Complete {
			b.field("value", t.Value)
		} else {
			b.field("value", nil)
		}
		b.field("values", nil)
		if t.State.IsFinished() {
			end := t.Finished
			if end.IsZero() {
				end = t.Started
			}
			b.field("datetime_complete", end.Local().Format(optunaTime))
		}
		b.key("distributions")
		b.object(func() {
			for i, name := range names {
				b.field(name, dists[i])
			}
		})
		b.key("params")
		b.object(func() {
			for i, name := range names {
				b.field(name, params[i])
			}
		})
		b.key("user_attrs")
		b.object(func() {
			for _, k := range sortedKeys(userAttrs) {
				b.field(k, userAttrs[k])
			}
		})
		b.key("system_attrs")
		b.object(func() {
			for i, k := range sysNames {
				b.field(k, sysValues[i])
			}
		})
		b.key("intermediate_values")
		b.object(func() {})
	})
	b.buf.WriteByte('\n')
	if err := b.err; err != nil {
		b.err = nil
		b.take()
		return nil, err
	}
	return b.take(), nil
}

// optunaDistribution returns the distribution JSON string of d (Optuna's
// distribution_to_json) and the internal value x in Optuna's form.
func optunaDistribution(d Distribution, x float64) (string, any, error) {
	var b pyJSON
	var value any
	switch d := d.(type) {
	case FloatDistribution:
		b.object(func() {
			b.field("name", "FloatDistribution")
			b.key("attributes")
			b.object(func() {
				if d.Step > 0 {
					b.field("step", d.Step)
				} else {
					b.field("step", nil)
				}
				b.field("low", d.Low)
				b.field("high", d.High)
				b.field("log", d.Log)
			})
		})
		value = x
	case IntDistribution:
		b.object(func() {
			b.field("name", "IntDistribution")
			b.key("attributes")
			b.object(func() {
				b.field("log", d.Log)
				b.field("step", max(d.Step, 1))
				b.field("low", d.Low)
				b.field("high", d.High)
			})
		})
		value = x // a float, as Optuna writes it (3.0)
	case CategoricalDistribution:
		choices := make([]any, len(d.Choices))
		for i, c := range d.Choices {
			v, err := optunaChoice(c)
			if err != nil {
				return "", nil, err
			}
			choices[i] = v
		}
		b.object(func() {
			b.field("name", "CategoricalDistribution")
			b.key("attributes")
			b.object(func() { b.field("choices", choices) })
		})
		value = int(x) // the index of the choice
	default:
		return "", nil, fmt.Errorf("distribution %v has no Optuna form", d)
	}
	if b.err != nil {
		return "", nil, b.err
	}
	return string(b.take()), value, nil
}

// optunaChoice is a categorical choice as Optuna takes one: None, bool,
// int, float or str.
func optunaChoice(c any) (any, error) {
	switch v := c.(type) {
	case nil, bool, string:
		return v, nil
	case float32:
		return float64(v), nil
	case float64:
		return v, nil
	}
	rv := reflect.ValueOf(c)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	}
	return nil, fmt.Errorf("choice %v of type %T has no Optuna form (allowed: nil, bool, string, Go integer and floating-point types)", c, c)
}

// optunaUserAttrs returns the user attributes as JSON values.
func optunaUserAttrs(attrs map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(attrs))
	for k, v := range attrs {
		switch v.(type) {
		case nil, bool, string, float64:
			out[k] = v
			continue
		}
		js, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("user attribute %q: Optuna needs a JSON value; %T is not: %w", k, v, err)
		}
		var jv any
		d := json.NewDecoder(bytes.NewReader(js))
		d.UseNumber()
		if err := d.Decode(&jv); err != nil {
			return nil, fmt.Errorf("user attribute %q: %w", k, err)
		}
		out[k] = jv
	}
	return out, nil
}

// optunaSystemAttrs returns the system attributes of an exported trial, in
// order: Optuna's own (failed_trial, retry_history, fixed_params, and those
// an import kept) as JSON values, the message as fail_reason (failed
// trials) or gomase:message, and gomase's others with the prefix gomase:.
func optunaSystemAttrs(t FrozenTrial) ([]string, []any) {
	vals := map[string]any{}
	for k, v := range t.SystemAttrs {
		switch {
		case k == failedTrialAttr || k == retryHistoryAttr || k == fixedParamsAttr:
			vals[k] = rawJSONOr(v)
		case strings.HasPrefix(k, optunaPrefix):
			vals[strings.TrimPrefix(k, optunaPrefix)] = rawJSONOr(v)
		default:
			vals[optunaGomasePrefix+k] = v
		}
	}
	if t.Message != "" {
		if t.State == Fail {
			vals[optunaFailReason] = t.Message
		} else {
			vals[optunaGomasePrefix+"message"] = t.Message
		}
	}
	if t.recovered {
		vals[optunaGomasePrefix+"recovered"] = true
	}
	keys := sortedKeys(vals)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = vals[k]
	}
	return keys, out
}

// rawJSONOr returns the JSON value s holds (numbers kept as written), or s
// itself when it is not JSON.
func rawJSONOr(s string) any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return s
	}
	return v
}

// pyJSON writes JSON as Python's json.dumps does by default: ", " and
// ": " separators, non-ASCII characters escaped, floats always with a
// decimal point or an exponent, and NaN, Infinity and -Infinity as bare
// tokens.
type pyJSON struct {
	buf      bytes.Buffer
	first    []bool // per open object or list: no member written yet
	afterKey bool   // a key was written: its value comes next
	compact  bool   // "," and ":" separators, without spaces
	err      error
}

func (b *pyJSON) take() []byte {
	out := bytes.Clone(b.buf.Bytes())
	b.buf.Reset()
	return out
}

// begin starts a value: after its key, or after a separator in a list.
func (b *pyJSON) begin() {
	if b.afterKey {
		b.afterKey = false
		return
	}
	if n := len(b.first); n > 0 {
		if !b.first[n-1] {
			b.buf.WriteString(b.separator(", "))
		}
		b.first[n-1] = false
	}
}

// separator returns sep (", " or ": "), without its space in compact mode.
func (b *pyJSON) separator(sep string) string {
	if b.compact {
		return sep[:1]
	}
	return sep
}

// object writes an object whose members members writes with field and key.
func (b *pyJSON) object(members func()) {
	b.begin()
	b.rawObject(members)
}

func (b *pyJSON) rawObject(members func()) {
	b.buf.WriteByte('{')
	b.first = append(b.first, true)
	members()
	b.first = b.first[:len(b.first)-1]
	b.buf.WriteByte('}')
}

// key writes the key of the member whose value comes next.
func (b *pyJSON) key(k string) {
	b.begin()
	b.str(k)
	b.buf.WriteString(b.separator(": "))
	b.afterKey = true
}

func (b *pyJSON) field(k string, v any) {
	b.key(k)
	b.value(v)
}

func (b *pyJSON) str(s string) {
	b.buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.buf.WriteString(`\"`)
		case r == '\\':
			b.buf.WriteString(`\\`)
		case r == '\n':
			b.buf.WriteString(`\n`)
		case r == '\r':
			b.buf.WriteString(`\r`)
		case r == '\t':
			b.buf.WriteString(`\t`)
		case r < 0x20 || r > 0x7f:
			if r > 0xffff {
				r1, r2 := utf16Surrogates(r)
				fmt.Fprintf(&b.buf, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b.buf, `\u%04x`, r)
			}
		default:
			b.buf.WriteRune(r)
		}
	}
	b.buf.WriteByte('"')
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// pyFloat formats x as Python's json writes a float.
func pyFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func (b *pyJSON) value(v any) {
	b.begin()
	switch v := v.(type) {
	case nil:
		b.buf.WriteString("null")
	case bool:
		b.buf.WriteString(strconv.FormatBool(v))
	case string:
		b.str(v)
	case json.Number:
		b.buf.WriteString(v.String())
	case float64:
		b.buf.WriteString(pyFloat(v))
	case float32:
		b.buf.WriteString(pyFloat(float64(v)))
	case int:
		b.buf.WriteString(strconv.Itoa(v))
	case int64:
		b.buf.WriteString(strconv.FormatInt(v, 10))
	case []any:
		b.buf.WriteByte('[')
		b.first = append(b.first, true)
		for _, e := range v {
			b.value(e)
		}
		b.first = b.first[:len(b.first)-1]
		b.buf.WriteByte(']')
	case map[string]any:
		b.rawObject(func() {
			for _, k := range sortedKeys(v) {
				b.field(k, v[k])
			}
		})
	default:
		if b.err == nil {
			b.err = fmt.Errorf("value %v of type %T has no JSON form here", v, v)
		}
		b.buf.WriteString("null")
	}
}

// ---- import

// OptunaImport describes what ImportOptunaJournal imported.
type OptunaImport struct {
	// Study is the name of the study created.
	Study string
	// Direction is its direction.
	Direction Direction
	// Trials counts the trials imported, by state.
	Trials map[TrialState]int
	// Notes says what was changed on the way: running trials imported as
	// failed, infinite values, intermediate values dropped.
	Notes []string
}

// ImportOptunaJournal reads an Optuna journal (JournalFileStorage, Optuna
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
func ImportOptunaJournal(st Storage, r io.Reader, name, as string) (OptunaImport, error) {
	j, err := replayOptunaJournal(r)
	if err != nil {
		return OptunaImport{}, err
	}
	s, err := j.pick(name)
	if err != nil {
		return OptunaImport{}, err
	}
	imp := OptunaImport{Study: s.name, Trials: map[TrialState]int{}}
	if as != "" {
		imp.Study = as
	}
	if len(s.directions) != 1 {
		return imp, fmt.Errorf("search: import: study %q has %d objectives; a gomase study has one (minimize or maximize)", s.name, len(s.directions))
	}
	switch s.directions[0] {
	case ojMinimize:
		imp.Direction = Minimize
	case ojMaximize:
		imp.Direction = Maximize
	default:
		return imp, fmt.Errorf("search: import: study %q has direction %d (allowed: 1 minimize, 2 maximize)", s.name, s.directions[0])
	}
	trials := make([]FrozenTrial, len(s.trials))
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
	if err := st.importStudy(imp.Study, imp.Direction, trials); err != nil {
		return imp, fmt.Errorf("search: import: %w", err)
	}
	return imp, nil
}

// ojStudy and ojTrial are a study and a trial as a replay builds them.
type ojStudy struct {
	name       string
	directions []int
	trials     []int // trial ids, in number order
}

type ojTrial struct {
	study, number   int
	state           int
	values          []float64
	start, complete time.Time
	params          map[string]float64
	dists           map[string]Distribution
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
	nextID  int
}

// pick returns the study named name, or the only one when name is "".
func (j *ojJournal) pick(name string) (*ojStudy, error) {
	var names []string
	for _, id := range j.order {
		if s, ok := j.studies[id]; ok {
			if name != "" && s.name == name {
				return s, nil
			}
			names = append(names, strconv.Quote(s.name))
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
	for _, id := range j.order {
		if s, ok := j.studies[id]; ok {
			return s, nil
		}
	}
	return nil, nil
}

// replayOptunaJournal replays the lines of a journal as Optuna 3.1 does.
func replayOptunaJournal(r io.Reader) (*ojJournal, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("search: import: %w", err)
	}
	j := &ojJournal{studies: map[int]*ojStudy{}}
	for n := 1; len(data) > 0; n++ {
		line := data
		i := bytes.IndexByte(data, '\n')
		last := i < 0
		if !last {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		op, err := decodeOptunaLine(line)
		if err != nil {
			if last || len(bytes.TrimSpace(data)) == 0 {
				break // a last line cut short by a crash: Optuna ignores it too
			}
			return nil, fmt.Errorf("search: import: line %d is not JSON: %w", n, err)
		}
		if err := j.apply(op); err != nil {
			return nil, fmt.Errorf("search: import: line %d: %w", n, err)
		}
	}
	return j, nil
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
		name, _ := op["study_name"].(string)
		for _, s := range j.studies {
			if s.name == name {
				return nil
			}
		}
		s := &ojStudy{name: name}
		dirs, _ := op["directions"].([]any)
		for _, d := range dirs {
			di, ok := ojInt(d)
			if !ok {
				return fmt.Errorf("study %q: direction %v is not an integer", name, d)
			}
			s.directions = append(s.directions, di)
		}
		j.studies[j.nextID] = s
		j.order = append(j.order, j.nextID)
		j.nextID++
	case ojDeleteStudy:
		if id, ok := ojInt(op["study_id"]); ok {
			delete(j.studies, id)
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
		t := &ojTrial{study: sid, number: len(s.trials), state: ojRunning, params: map[string]float64{},
			dists: map[string]Distribution{}, userAttrs: map[string]any{}, systemAttrs: map[string]any{}}
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
				d, err := optunaDistFromJSON(dj)
				if err != nil {
					return fmt.Errorf("parameter %q: %w", name, err)
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
		d, err := optunaDistFromJSON(op["distribution"])
		if err != nil {
			return fmt.Errorf("parameter %q: %w", name, err)
		}
		x, ok := ojFloat(op["param_value_internal"])
		if !ok {
			return fmt.Errorf("parameter %q: value %v is not a number", name, op["param_value_internal"])
		}
		// Optuna drops a parameter whose distribution does not match the
		// study's first one of that name.
		for _, id := range j.studies[t.study].trials {
			if old, ok := j.trials[id].dists[name]; ok {
				if !optunaCompatible(old, d) {
					return nil
				}
				break
			}
		}
		t.params[name], t.dists[name] = x, d
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

// setValues reads value (one objective) or values (a list).
func (t *ojTrial) setValues(value, values any) error {
	if value != nil {
		v, ok := ojFloat(value)
		if !ok {
			return fmt.Errorf("value %v is not a number", value)
		}
		t.values = []float64{v}
		return nil
	}
	if values == nil {
		return nil
	}
	list, ok := values.([]any)
	if !ok {
		return fmt.Errorf("values %v is not a list", values)
	}
	t.values = t.values[:0]
	for _, e := range list {
		v, ok := ojFloat(e)
		if !ok {
			return fmt.Errorf("value %v is not a number", e)
		}
		t.values = append(t.values, v)
	}
	return nil
}

// frozen turns a replayed trial into a gomase trial, noting in imp what it
// changes.
func (t *ojTrial) frozen(imp *OptunaImport) (FrozenTrial, error) {
	ft := FrozenTrial{Number: t.number, Value: math.NaN(), Started: t.start, Finished: t.complete,
		Distributions: t.dists, internal: map[string]float64{}, UserAttrs: map[string]any{}, SystemAttrs: map[string]string{}}
	for name, x := range t.params {
		d := t.dists[name]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ft, fmt.Errorf("parameter %q has value %v", name, x)
		}
		if c, ok := d.(CategoricalDistribution); ok && (x != math.Trunc(x) || x < 0 || int(x) >= len(c.Choices)) {
			return ft, fmt.Errorf("parameter %q: choice index %v is not one of the %d choices", name, x, len(c.Choices))
		}
		if _, ok := d.(IntDistribution); ok && x != math.Trunc(x) {
			return ft, fmt.Errorf("parameter %q: int value %v is not an integer", name, x)
		}
		ft.internal[name] = x
	}
	for name := range t.dists {
		if _, ok := t.params[name]; !ok {
			delete(ft.Distributions, name)
		}
	}
	for k, v := range t.userAttrs {
		ft.UserAttrs[k] = ojFinite(ojPlain(v))
	}
	for k, v := range t.systemAttrs {
		switch {
		case k == optunaFailReason || k == optunaGomasePrefix+"message":
			if s, ok := v.(string); ok {
				ft.Message = s
				continue
			}
		case k == optunaGomasePrefix+"recovered":
			ft.recovered = v == true
			continue
		case strings.HasPrefix(k, optunaGomasePrefix):
			if s, ok := v.(string); ok {
				ft.SystemAttrs[strings.TrimPrefix(k, optunaGomasePrefix)] = s
				continue
			}
		}
		js := compactJSON(v)
		if k == failedTrialAttr || k == retryHistoryAttr || k == fixedParamsAttr {
			ft.SystemAttrs[k] = js
		} else {
			ft.SystemAttrs[optunaPrefix+k] = js
		}
	}
	switch t.state {
	case ojRunning:
		ft.State, ft.recovered = Fail, true
		ft.Message = "imported from an Optuna journal as failed: it was running there, and no worker owns it now"
		if ft.Started.IsZero() {
			ft.Started = time.Now()
		}
		ft.Finished = ft.Started
		imp.Notes = append(imp.Notes, fmt.Sprintf("trial %d was running: imported as failed", t.number))
	case ojComplete:
		if len(t.values) != 1 {
			return ft, fmt.Errorf("complete with %d values; a gomase trial has one", len(t.values))
		}
		ft.State, ft.Value = Complete, t.values[0]
		if math.IsNaN(ft.Value) || math.IsInf(ft.Value, 0) {
			ft.State, ft.Value = Fail, math.NaN()
			ft.Message = fmt.Sprintf("imported from an Optuna journal as failed: its value was %v, and a complete gomase trial needs a finite value", t.values[0])
			imp.Notes = append(imp.Notes, fmt.Sprintf("trial %d had value %v: imported as failed", t.number, t.values[0]))
		}
	case ojPruned:
		ft.State = Pruned
	case ojFail:
		ft.State = Fail
	case ojWaiting:
		ft.State, ft.Started, ft.Finished = Waiting, time.Time{}, time.Time{}
	}
	if ft.State.IsFinished() && ft.Finished.IsZero() {
		ft.Finished = ft.Started
	}
	return ft, nil
}

// ojFinite replaces the non-finite floats of a user attribute, which JSON
// cannot hold, by the strings "NaN", "Infinity" and "-Infinity".
func ojFinite(v any) any {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			return "NaN"
		case math.IsInf(x, 1):
			return "Infinity"
		case math.IsInf(x, -1):
			return "-Infinity"
		}
	case []any:
		for i := range x {
			x[i] = ojFinite(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = ojFinite(x[k])
		}
	}
	return v
}

// compactJSON writes a decoded value back as compact JSON (Python's tokens
// as themselves).
func compactJSON(v any) string {
	b := pyJSON{compact: true}
	b.value(ojTokens(v))
	return string(b.take())
}

// ojTokens turns the stand-ins of Python's tokens back into floats.
func ojTokens(v any) any {
	switch x := v.(type) {
	case string:
		if f, ok := ojFloat(x); ok {
			return f
		}
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = ojTokens(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k := range x {
			out[k] = ojTokens(x[k])
		}
		return out
	}
	return v
}

// optunaDistFromJSON reads a distribution: the JSON string Optuna writes
// (or the object itself), with the current names (FloatDistribution,
// IntDistribution, CategoricalDistribution), the names deprecated in Optuna
// 3.0 (UniformDistribution, LogUniformDistribution,
// DiscreteUniformDistribution, IntUniformDistribution,
// IntLogUniformDistribution), or the old {"type": …} form.
func optunaDistFromJSON(v any) (Distribution, error) {
	if s, ok := v.(string); ok {
		m, err := decodeOptunaLine([]byte(s))
		if err != nil {
			return nil, fmt.Errorf("distribution %q is not JSON: %w", s, err)
		}
		v = m
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("distribution %v is not a JSON object", v)
	}
	attrs, _ := m["attributes"].(map[string]any)
	name, _ := m["name"].(string)
	if name == "" { // the old form: {"type": "float", "low": …}
		attrs = m
		switch m["type"] {
		case "float":
			name = "FloatDistribution"
		case "int":
			name = "IntDistribution"
		case "categorical":
			name = "CategoricalDistribution"
		default:
			return nil, fmt.Errorf("distribution %v has no name nor a known type", v)
		}
	}
	if attrs == nil {
		return nil, fmt.Errorf("distribution %s has no attributes", name)
	}
	num := func(k string) (float64, error) {
		f, ok := ojFloat(attrs[k])
		if !ok {
			return 0, fmt.Errorf("%s: %s %v is not a number", name, k, attrs[k])
		}
		return f, nil
	}
	integer := func(k string, def int) (int, error) {
		if attrs[k] == nil {
			return def, nil
		}
		i, ok := ojInt(attrs[k])
		if !ok {
			return 0, fmt.Errorf("%s: %s %v is not an integer", name, k, attrs[k])
		}
		return i, nil
	}
	var d Distribution
	switch name {
	case "FloatDistribution", "UniformDistribution", "LogUniformDistribution", "DiscreteUniformDistribution":
		low, err1 := num("low")
		high, err2 := num("high")
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		fd := FloatDistribution{Low: low, High: high, Log: attrs["log"] == true || name == "LogUniformDistribution"}
		step := attrs["step"]
		if name == "DiscreteUniformDistribution" {
			step = attrs["q"]
		}
		if step != nil {
			s, ok := ojFloat(step)
			if !ok {
				return nil, fmt.Errorf("%s: step %v is not a number", name, step)
			}
			fd.Step = s
		}
		d = fd
	case "IntDistribution", "IntUniformDistribution", "IntLogUniformDistribution":
		low, err1 := integer("low", 0)
		high, err2 := integer("high", 0)
		step, err3 := integer("step", 1)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		d = IntDistribution{Low: low, High: high, Step: step, Log: attrs["log"] == true || name == "IntLogUniformDistribution"}
	case "CategoricalDistribution":
		list, ok := attrs["choices"].([]any)
		if !ok {
			return nil, fmt.Errorf("%s: choices %v is not a list", name, attrs["choices"])
		}
		cd := CategoricalDistribution{Choices: make([]any, len(list))}
		for i, c := range list {
			switch x := c.(type) {
			case nil, bool:
				cd.Choices[i] = x
			case string:
				if f, ok := ojFloat(x); ok {
					cd.Choices[i] = f
				} else {
					cd.Choices[i] = x
				}
			case json.Number:
				if n, err := strconv.Atoi(string(x)); err == nil {
					cd.Choices[i] = n
				} else if f, err := strconv.ParseFloat(string(x), 64); err == nil {
					cd.Choices[i] = f
				} else {
					return nil, fmt.Errorf("%s: choice %v is not a number gomase holds", name, x)
				}
			default:
				return nil, fmt.Errorf("%s: choice %v of JSON type %T (allowed: null, bool, number, string)", name, c, c)
			}
		}
		d = cd
	default:
		return nil, fmt.Errorf("unknown distribution %q (allowed: FloatDistribution, IntDistribution, CategoricalDistribution and Optuna 2's names)", name)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// optunaCompatible is Optuna's check_distribution_compatibility: the same
// class, the same log flag, the same choices.
func optunaCompatible(a, b Distribution) bool {
	switch x := a.(type) {
	case FloatDistribution:
		y, ok := b.(FloatDistribution)
		return ok && x.Log == y.Log
	case IntDistribution:
		y, ok := b.(IntDistribution)
		return ok && x.Log == y.Log
	case CategoricalDistribution:
		y, ok := b.(CategoricalDistribution)
		return ok && slices.EqualFunc(x.Choices, y.Choices, func(p, q any) bool { return reflect.DeepEqual(p, q) })
	}
	return false
}
