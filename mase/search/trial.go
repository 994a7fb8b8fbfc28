package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"time"

	"github.com/gomase/gomase/mase/search/studydata"
)

// ErrPruned marks a pruned trial: an objective that returns an error wrapping
// ErrPruned (fmt.Errorf("%w: ...", search.ErrPruned)) ends its trial in state
// Pruned instead of Fail, like raising optuna.TrialPruned.
var ErrPruned = errors.New("search: trial pruned")

// SuggestOption modifies a SuggestInt or SuggestFloat call.
type SuggestOption func(*suggestOptions)

type suggestOptions struct {
	log     bool
	step    float64
	stepSet bool // WithStep was given (a float step of 0 is refused, as Optuna refuses it)
}

// WithLog samples the parameter on a logarithmic scale (low must be > 0).
func WithLog() SuggestOption { return func(o *suggestOptions) { o.log = true } }

// WithStep restricts the parameter to low, low+step, low+2·step, … ≤ high.
// For SuggestInt the step must be a whole number ≥ 1.
func WithStep(step float64) SuggestOption {
	return func(o *suggestOptions) { o.step, o.stepSet = step, true }
}

// Trial is one evaluation of the objective: it hands out parameter values and
// records user attributes. A Trial is safe for concurrent use.
type Trial struct {
	study  *Study
	number int
	ctx    context.Context

	mu        sync.Mutex
	finished  bool
	started   time.Time
	internal  map[string]float64
	dists     map[string]studydata.Distribution
	userAttrs map[string]any
	preset    map[string]bool // parameters the trial held when it started (a retry's)
	fixed     map[string]any  // fixed_params of an enqueued trial

	sysMu       sync.Mutex // separate from mu: samplers read these while mu is held
	systemAttrs map[string]string
}

// Number returns the trial's number, unique within the study's storage.
func (t *Trial) Number() int { return t.number }

// Context returns the context Optimize (or Ask) was given, for objectives
// that train models and should stop early when it is cancelled.
func (t *Trial) Context() context.Context { return t.ctx }

// Study returns the study the trial belongs to.
func (t *Trial) Study() *Study { return t.study }

// SuggestFloat returns a value for the float parameter name in [low, high].
// Options: WithLog() for a log scale (low > 0), WithStep(s) for the grid low,
// low+s, … (high is moved down onto the grid if needed, with a warning).
// Suggesting a name again in the same trial with the same range returns the
// same value; a different range is an error.
func (t *Trial) SuggestFloat(name string, low, high float64, opts ...SuggestOption) (float64, error) {
	var o suggestOptions
	for _, f := range opts {
		f(&o)
	}
	if o.stepSet && !(o.step > 0) {
		return 0, fmt.Errorf("search: SuggestFloat(%q): step %v is invalid; a step must be a finite number > 0 (leave WithStep out for a continuous range)", name, o.step)
	}
	d := studydata.FloatDistribution{Low: low, High: high, Step: o.step, Log: o.log}
	if err := d.Validate(); err != nil {
		return 0, fmt.Errorf("search: SuggestFloat(%q): %w", name, err)
	}
	if d.AdjustHigh() {
		t.study.logger.Warn("search: float range is not a multiple of step; high moved down onto the step grid",
			"param", name, "low", low, "high", high, "step", o.step, "new_high", d.High)
	}
	x, err := t.suggest(name, d)
	if err != nil {
		return 0, err
	}
	return x, nil
}

// SuggestInt returns a value for the int parameter name in [low, high].
// Options: WithLog() for a log scale (low ≥ 1), WithStep(s) for the grid low,
// low+s, … (s a whole number ≥ 1; high is moved down onto the grid if needed).
// Suggesting a name again in the same trial with the same range returns the
// same value; a different range is an error.
func (t *Trial) SuggestInt(name string, low, high int, opts ...SuggestOption) (int, error) {
	o := suggestOptions{step: 1}
	for _, f := range opts {
		f(&o)
	}
	if o.step != math.Trunc(o.step) || o.step < 1 || o.step > math.MaxInt32 {
		return 0, fmt.Errorf("search: SuggestInt(%q): step %v is invalid; an int step must be a whole number ≥ 1", name, o.step)
	}
	d := studydata.IntDistribution{Low: low, High: high, Step: int(o.step), Log: o.log}
	if err := d.Validate(); err != nil {
		return 0, fmt.Errorf("search: SuggestInt(%q): %w", name, err)
	}
	if d.AdjustHigh() {
		t.study.logger.Warn("search: int range is not a multiple of step; high moved down onto the step grid",
			"param", name, "low", low, "high", high, "step", d.Step, "new_high", d.High)
	}
	x, err := t.suggest(name, d)
	if err != nil {
		return 0, err
	}
	return int(math.Round(x)), nil
}

// SuggestCategorical returns one of choices (the element itself, so its Go
// type is the caller's). Choices are compared by value; suggesting a name
// again in the same trial needs the same choices.
func (t *Trial) SuggestCategorical(name string, choices []any) (any, error) {
	d := studydata.CategoricalDistribution{Choices: choices}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("search: SuggestCategorical(%q): %w", name, err)
	}
	x, err := t.suggest(name, d)
	if err != nil {
		return nil, err
	}
	return choices[int(x)], nil
}

// Categorical is SuggestCategorical for a typed slice: it returns the chosen
// element as a T.
func Categorical[T any](t *Trial, name string, choices []T) (T, error) {
	anys := make([]any, len(choices))
	for i, c := range choices {
		anys[i] = c
	}
	d := studydata.CategoricalDistribution{Choices: anys}
	var zero T
	if err := d.Validate(); err != nil {
		return zero, fmt.Errorf("search: Categorical(%q): %w", name, err)
	}
	x, err := t.suggest(name, d)
	if err != nil {
		return zero, err
	}
	return choices[int(x)], nil
}

// suggest returns the internal value of parameter name, sampling it the first time.
func (t *Trial) suggest(name string, d studydata.Distribution) (float64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name == "" {
		return 0, errors.New("search: empty parameter name; give every parameter a name")
	}
	if t.finished {
		return 0, fmt.Errorf("search: trial %d is finished; suggest %q from inside its objective", t.number, name)
	}
	if old, ok := t.dists[name]; ok {
		if !old.Equal(d) {
			if t.preset[name] {
				return 0, fmt.Errorf("search: parameter %q of trial %d is fixed to %v with distribution %v (the trial retries an earlier one with its parameters); suggesting it as %v is not allowed",
					name, t.number, old.ToExternal(t.internal[name]), old, d)
			}
			return 0, fmt.Errorf("search: parameter %q was already suggested in trial %d as %v; suggesting it again as %v is not allowed (use the same distribution, or another name)",
				name, t.number, old, d)
		}
		return t.internal[name], nil
	}
	var x float64
	if v, ok := t.fixed[name]; ok {
		var err error
		if x, err = d.ToInternal(v); err != nil {
			return 0, fmt.Errorf("search: trial %d, parameter %q: the enqueued value does not fit %v: %w", t.number, name, d, err)
		}
		if !d.Contains(x) {
			t.study.logger.Warn("search: the enqueued value is outside the parameter's distribution; it is used anyway",
				"trial", t.number, "param", name, "value", v, "distribution", d.String())
		}
	} else if d.Single() {
		switch d := d.(type) {
		case studydata.FloatDistribution:
			x = d.Low
		case studydata.IntDistribution:
			x = float64(d.Low)
		}
	} else {
		var err error
		x, err = t.study.sample(t, name, d)
		if err != nil {
			return 0, fmt.Errorf("search: trial %d, parameter %q: %w", t.number, name, err)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("search: trial %d, parameter %q: sampler returned %v; a sampled value must be finite", t.number, name, x)
		}
		if !d.Contains(x) {
			if _, cat := d.(studydata.CategoricalDistribution); cat {
				return 0, fmt.Errorf("search: trial %d, parameter %q: sampler returned choice index %v, not in [0, %d)", t.number, name, x, len(d.(studydata.CategoricalDistribution).Choices))
			}
			if id, isInt := d.(studydata.IntDistribution); isInt && x != math.Trunc(x) {
				return 0, fmt.Errorf("search: trial %d, parameter %q: sampler returned %v, not an integer, for %v", t.number, name, x, id)
			}
			t.study.logger.Warn("search: value is outside the parameter's distribution; it is used anyway",
				"trial", t.number, "param", name, "value", d.ToExternal(x), "distribution", d.String())
		}
	}
	if err := t.study.storage.SetParam(t.study.name, t.number, name, x, d); err != nil {
		return 0, fmt.Errorf("search: trial %d, parameter %q: %w", t.number, name, err)
	}
	t.internal[name] = x
	t.dists[name] = d
	return x, nil
}

// SetUserAttr records a user attribute on the trial (the model, a metric).
// With a JournalStorage the value must be JSON-encodable.
func (t *Trial) SetUserAttr(key string, value any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finished {
		return fmt.Errorf("search: trial %d is finished; set user attribute %q from inside its objective", t.number, key)
	}
	if err := t.study.storage.SetUserAttr(t.study.name, t.number, key, value); err != nil {
		return fmt.Errorf("search: trial %d, user attribute %q: %w", t.number, key, err)
	}
	t.userAttrs[key] = value
	return nil
}

// setSystemAttr records sampler bookkeeping on the trial.
func (t *Trial) setSystemAttr(key, value string) error {
	if err := t.study.storage.SetSystemAttr(t.study.name, t.number, key, value); err != nil {
		return err
	}
	t.sysMu.Lock()
	t.systemAttrs[key] = value
	t.sysMu.Unlock()
	return nil
}

func (t *Trial) systemAttr(key string) (string, bool) {
	t.sysMu.Lock()
	defer t.sysMu.Unlock()
	v, ok := t.systemAttrs[key]
	return v, ok
}

// Params returns the parameters suggested so far, as the objective got them.
func (t *Trial) Params() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := make(map[string]any, len(t.internal))
	for k, x := range t.internal {
		p[k] = t.dists[k].ToExternal(x)
	}
	return p
}

// UserAttrs returns a copy of the user attributes set so far.
func (t *Trial) UserAttrs() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.userAttrs)
}
