package optuna

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"
)

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
func (t *ojTrial) frozen(imp *Import) (studydata.FrozenTrial, error) {
	ft := studydata.FrozenTrial{Number: t.number, Value: math.NaN(), Started: t.start, Finished: t.complete,
		Distributions: t.dists, InternalParams: map[string]float64{}, UserAttrs: map[string]any{}, SystemAttrs: map[string]string{}}
	for name, x := range t.params {
		d := t.dists[name]
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ft, fmt.Errorf("parameter %q has value %v", name, x)
		}
		if c, ok := d.(studydata.CategoricalDistribution); ok && (x != math.Trunc(x) || x < 0 || int(x) >= len(c.Choices)) {
			return ft, fmt.Errorf("parameter %q: choice index %v is not one of the %d choices", name, x, len(c.Choices))
		}
		if _, ok := d.(studydata.IntDistribution); ok && x != math.Trunc(x) {
			return ft, fmt.Errorf("parameter %q: int value %v is not an integer", name, x)
		}
		ft.InternalParams[name] = x
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
			ft.Recovered = v == true
			continue
		case strings.HasPrefix(k, optunaGomasePrefix):
			if s, ok := v.(string); ok {
				ft.SystemAttrs[strings.TrimPrefix(k, optunaGomasePrefix)] = s
				continue
			}
		}
		js := compactJSON(v)
		if k == studydata.FailedTrialAttr || k == studydata.RetryHistoryAttr || k == studydata.FixedParamsAttr {
			ft.SystemAttrs[k] = js
		} else {
			ft.SystemAttrs[optunaPrefix+k] = js
		}
	}
	switch t.state {
	case ojRunning:
		ft.State, ft.Recovered = studydata.Fail, true
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
		ft.State, ft.Value = studydata.Complete, t.values[0]
		if math.IsNaN(ft.Value) || math.IsInf(ft.Value, 0) {
			ft.State, ft.Value = studydata.Fail, math.NaN()
			ft.Message = fmt.Sprintf("imported from an Optuna journal as failed: its value was %v, and a complete gomase trial needs a finite value", t.values[0])
			imp.Notes = append(imp.Notes, fmt.Sprintf("trial %d had value %v: imported as failed", t.number, t.values[0]))
		}
	case ojPruned:
		ft.State = studydata.Pruned
	case ojFail:
		ft.State = studydata.Fail
	case ojWaiting:
		ft.State, ft.Started, ft.Finished = studydata.Waiting, time.Time{}, time.Time{}
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

// distribution reads the distribution of parameter name as Optuna would
// hold it: a stepped range whose high is off its step grid has its high
// moved down onto it (with a note, once per distribution).
func (j *ojJournal) distribution(name string, v any) (studydata.Distribution, error) {
	d, err := optunaDistFromJSON(v)
	if err != nil {
		return nil, fmt.Errorf("parameter %q: %w", name, err)
	}
	before := d.String()
	switch x := d.(type) {
	case studydata.FloatDistribution:
		if x.AdjustHigh() {
			d = x
		}
	case studydata.IntDistribution:
		if x.AdjustHigh() {
			d = x
		}
	}
	if after := d.String(); after != before {
		key := name + " " + before
		if _, done := j.adjusted[key]; !done {
			j.adjusted[key] = fmt.Sprintf("parameter %q: %s is not a whole number of steps; imported as %s, as Optuna holds it", name, before, after)
		}
	}
	return d, nil
}

// optunaDistFromJSON reads a distribution: the JSON string Optuna writes
// (or the object itself), with the current names (FloatDistribution,
// IntDistribution, CategoricalDistribution), the names deprecated in Optuna
// 3.0 (UniformDistribution, LogUniformDistribution,
// DiscreteUniformDistribution, IntUniformDistribution,
// IntLogUniformDistribution), or the old {"type": …} form.
func optunaDistFromJSON(v any) (studydata.Distribution, error) {
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
	logFlag := func() (bool, error) {
		switch v := attrs["log"].(type) {
		case nil:
			return false, nil
		case bool:
			return v, nil
		}
		return false, fmt.Errorf("%s: log %v is not a boolean (true or false)", name, attrs["log"])
	}
	var d studydata.Distribution
	switch name {
	case "FloatDistribution", "UniformDistribution", "LogUniformDistribution", "DiscreteUniformDistribution":
		low, err1 := num("low")
		high, err2 := num("high")
		if err := cmp.Or(err1, err2); err != nil { // the first: one line
			return nil, err
		}
		log, err := logFlag()
		if err != nil {
			return nil, err
		}
		fd := studydata.FloatDistribution{Low: low, High: high, Log: log || name == "LogUniformDistribution"}
		step := attrs["step"]
		if name == "DiscreteUniformDistribution" {
			step = attrs["q"]
		}
		if step != nil {
			s, ok := ojFloat(step)
			if !ok {
				return nil, fmt.Errorf("%s: step %v is not a number", name, step)
			}
			if !(s > 0) {
				return nil, fmt.Errorf("%s: step %v is not > 0 (Optuna refuses it; null is no step)", name, s)
			}
			fd.Step = s
		}
		d = fd
	case "IntDistribution", "IntUniformDistribution", "IntLogUniformDistribution":
		low, err1 := integer("low", 0)
		high, err2 := integer("high", 0)
		step, err3 := integer("step", 1)
		if err := cmp.Or(err1, err2, err3); err != nil {
			return nil, err
		}
		log, err := logFlag()
		if err != nil {
			return nil, err
		}
		d = studydata.IntDistribution{Low: low, High: high, Step: step, Log: log || name == "IntLogUniformDistribution"}
	case "CategoricalDistribution":
		list, ok := attrs["choices"].([]any)
		if !ok {
			return nil, fmt.Errorf("%s: choices %v is not a list", name, attrs["choices"])
		}
		cd := studydata.CategoricalDistribution{Choices: make([]any, len(list))}
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
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// optunaCompatible is Optuna's check_distribution_compatibility: the same
// class, the same log flag, the same choices.
func optunaCompatible(a, b studydata.Distribution) bool {
	switch x := a.(type) {
	case studydata.FloatDistribution:
		y, ok := b.(studydata.FloatDistribution)
		return ok && x.Log == y.Log
	case studydata.IntDistribution:
		y, ok := b.(studydata.IntDistribution)
		return ok && x.Log == y.Log
	case studydata.CategoricalDistribution:
		y, ok := b.(studydata.CategoricalDistribution)
		return ok && slices.EqualFunc(x.Choices, y.Choices, func(p, q any) bool { return reflect.DeepEqual(p, q) })
	}
	return false
}
