package optuna

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/gomase/gomase/mase/search/studydata"
)

// Optuna's JournalFileStorage format (Optuna 3.1, unchanged to 4.x): one
// JSON object per line, each an operation {"op_code": N, "worker_id": W, …}.
// Studies and trials are numbered implicitly, in the order their creation
// lines appear. ExportJournal writes a study as one CREATE_STUDY line
// and one self-contained CREATE_TRIAL line per trial (what Optuna's
// study.add_trial writes); ImportJournal replays a journal as Optuna
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

// ExportJournal writes study of storage st to w in Optuna's
// JournalFileStorage format, so that Optuna (3.1 and later), its plots and
// optuna-dashboard can load it: one CREATE_STUDY line, then one complete
// CREATE_TRIAL line per trial, in number order (so that the trial numbers
// are kept). Parameters keep their distributions (Float, Int, Categorical;
// log and step); failed_trial, retry_history and fixed_params are written
// as Optuna's JSON values; the message of a failed trial becomes the
// system attribute fail_reason, and gomase's other system attributes are
// written with the prefix "gomase:". Running trials are written as RUNNING.
// It returns the number of trials written.
func ExportJournal(st studydata.Storage, study string, w io.Writer) (int, error) {
	dir, err := st.StudyDirection(study)
	if err != nil {
		return 0, fmt.Errorf("search: export: %w", err)
	}
	ts, err := st.Trials(study)
	if err != nil {
		return 0, fmt.Errorf("search: export: %w", err)
	}
	worker := optunaWorkerID()
	bw := bufio.NewWriter(w)
	var b pyJSON
	direction := ojMinimize
	if dir == studydata.Maximize {
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
func exportTrial(b *pyJSON, worker string, t studydata.FrozenTrial) ([]byte, error) {
	state := map[studydata.TrialState]int{studydata.Running: ojRunning, studydata.Complete: ojComplete, studydata.Pruned: ojPruned, studydata.Fail: ojFail, studydata.Waiting: ojWaiting}[t.State]
	names := slices.Sorted(maps.Keys(t.Distributions))
	dists := make([]string, len(names))
	params := make([]any, len(names))
	for i, name := range names {
		dj, x, err := optunaDistribution(t.Distributions[name], t.InternalParams[name])
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
		if t.Started.IsZero() || t.State == studydata.Waiting {
			b.field("datetime_start", nil)
		} else {
			b.field("datetime_start", t.Started.Local().Format(optunaTime))
		}
		b.field("state", state)
		if t.State == studydata.Complete {
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
			for _, k := range slices.Sorted(maps.Keys(userAttrs)) {
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
func optunaDistribution(d studydata.Distribution, x float64) (string, any, error) {
	var b pyJSON
	var value any
	switch d := d.(type) {
	case studydata.FloatDistribution:
		d.AdjustHigh() // Optuna would move it so on loading, with a warning
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
	case studydata.IntDistribution:
		d.AdjustHigh()
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
	case studydata.CategoricalDistribution:
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
func optunaSystemAttrs(t studydata.FrozenTrial) ([]string, []any) {
	vals := map[string]any{}
	for k, v := range t.SystemAttrs {
		switch {
		case k == studydata.FailedTrialAttr || k == studydata.RetryHistoryAttr || k == studydata.FixedParamsAttr:
			vals[k] = rawJSONOr(v)
		case strings.HasPrefix(k, optunaPrefix):
			vals[strings.TrimPrefix(k, optunaPrefix)] = rawJSONOr(v)
		default:
			vals[optunaGomasePrefix+k] = v
		}
	}
	if t.Message != "" {
		if t.State == studydata.Fail {
			vals[optunaFailReason] = t.Message
		} else {
			vals[optunaGomasePrefix+"message"] = t.Message
		}
	}
	if t.Recovered {
		vals[optunaGomasePrefix+"recovered"] = true
	}
	keys := slices.Sorted(maps.Keys(vals))
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
