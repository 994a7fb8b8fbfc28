package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoCompleteTrial is returned by BestTrial when no trial has completed.
var ErrNoCompleteTrial = errors.New("search: the study has no complete trial")

// ErrStudyStopped is returned by Ask when the sampler has nothing left to try
// (a GridSampler whose every point has been evaluated).
var ErrStudyStopped = errors.New("search: the sampler has no more points to try")

// maxConsecutiveFailures bounds OptimizeUntil on an objective that always fails.
const maxConsecutiveFailures = 10

// Config configures NewStudy. The zero value is a minimising study named
// "default" with a TPE sampler (randomly seeded) and in-memory storage.
type Config struct {
	// Name identifies the study in its storage; "" means "default".
	Name string
	// Direction is Minimize (the zero value) or Maximize.
	Direction Direction
	// Sampler proposes parameter values; nil means NewTPESampler(TPEOptions{})
	// with a random seed, Optuna's default.
	Sampler Sampler
	// Storage holds the trials; nil means a new InMemoryStorage. Give a
	// JournalStorage to keep a study on disk and resume it.
	Storage Storage
	// Logger receives a line per finished trial (Info) and warnings; nil
	// means slog.Default().
	Logger *slog.Logger
	// Callbacks are called, in order, with every trial this Study value
	// finishes (through Optimize, OptimizeUntil or Tell), after it is
	// stored: Optuna's optimize(callbacks=...). Trials finished by other
	// processes sharing the storage are not reported.
	Callbacks []func(*Study, FrozenTrial)
}

// Study is an optimisation task: a direction, a sampler and a storage holding
// its trials. A Study is safe for concurrent use; several goroutines may run
// Optimize on it at once (the sampler is called under a lock).
type Study struct {
	name      string
	direction Direction
	sampler   Sampler
	storage   Storage
	logger    *slog.Logger
	callbacks []func(*Study, FrozenTrial)

	samplerMu sync.Mutex
	stop      atomic.Bool
}

// NewStudy creates the study cfg describes, or resumes it when cfg.Storage
// already holds a study of that name (a journal written by an earlier run):
// its finished trials are kept and feed the sampler, and its Running trials
// whose process on this machine is gone are marked Fail. The recorded
// direction must match cfg.Direction.
func NewStudy(cfg Config) (*Study, error) {
	s := &Study{name: cfg.Name, direction: cfg.Direction, sampler: cfg.Sampler, storage: cfg.Storage, logger: cfg.Logger, callbacks: cfg.Callbacks}
	if s.name == "" {
		s.name = "default"
	}
	if s.direction != Minimize && s.direction != Maximize {
		return nil, fmt.Errorf("search: NewStudy: direction %v is invalid (allowed: Minimize, Maximize)", s.direction)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.sampler == nil {
		tpe, err := NewTPESampler(TPEOptions{Seed: rand.Int64()})
		if err != nil {
			return nil, err
		}
		s.sampler = tpe
	}
	if s.storage == nil {
		s.storage = NewInMemoryStorage()
	}
	dir, existed, err := s.storage.createStudy(s.name, s.direction)
	if err != nil {
		return nil, fmt.Errorf("search: NewStudy(%q): %w", s.name, err)
	}
	if dir != s.direction {
		return nil, fmt.Errorf("search: NewStudy(%q): the storage holds this study with direction %v, but Config.Direction is %v; use the recorded direction or another name",
			s.name, dir, s.direction)
	}
	if existed {
		if err := s.recover(); err != nil {
			return nil, err
		}
		if trials, err := s.storage.trials(s.name); err == nil {
			s.logger.Info("search: resuming study", "study", s.name, "trials", len(trials), "finished", countStates(trials, Complete, Pruned, Fail))
		}
	}
	return s, nil
}

// recover marks Fail the Running trials whose process is gone.
func (s *Study) recover() error {
	failed, err := s.storage.failStale(s.name)
	if err != nil {
		return fmt.Errorf("search: study %q: marking crashed trials failed: %w", s.name, err)
	}
	if len(failed) > 0 {
		s.logger.Warn("search: trials left running by a crashed process were marked failed", "study", s.name, "trials", failed)
	}
	return nil
}

// Name returns the study's name.
func (s *Study) Name() string { return s.name }

// Direction returns Minimize or Maximize.
func (s *Study) Direction() Direction { return s.direction }

// Sampler returns the study's sampler.
func (s *Study) Sampler() Sampler { return s.sampler }

// Trials returns a copy of every trial of the study, in number order,
// including those other processes sharing the storage run or ran.
func (s *Study) Trials() ([]FrozenTrial, error) {
	ts, err := s.storage.trials(s.name)
	if err != nil {
		return nil, fmt.Errorf("search: study %q: %w", s.name, err)
	}
	for i := range ts {
		ts[i] = ts[i].clone()
	}
	return ts, nil
}

// history returns the trials without copying; samplers must not modify them.
func (s *Study) history() ([]FrozenTrial, error) {
	return s.storage.trials(s.name)
}

// BestTrial returns the complete trial with the best value (the lowest
// number among equals); ErrNoCompleteTrial when there is none.
func (s *Study) BestTrial() (FrozenTrial, error) {
	ts, err := s.storage.trials(s.name)
	if err != nil {
		return FrozenTrial{}, fmt.Errorf("search: study %q: %w", s.name, err)
	}
	best := -1
	for i, t := range ts {
		if t.State == Complete && (best < 0 || s.direction.Better(t.Value, ts[best].Value)) {
			best = i
		}
	}
	if best < 0 {
		return FrozenTrial{}, fmt.Errorf("%w (study %q, %d trials)", ErrNoCompleteTrial, s.name, len(ts))
	}
	return ts[best].clone(), nil
}

// Stop makes Optimize return after the trial in progress, like Optuna's
// study.stop(); an objective may call it. Each Optimize call starts afresh.
func (s *Study) Stop() { s.stop.Store(true) }

// Objective evaluates one trial: it suggests parameters through the trial
// and returns the value to minimise or maximise. Returning an error wrapping
// ErrPruned prunes the trial; any other error (or a panic) fails it.
type Objective func(t *Trial) (float64, error)

// Optimize runs up to nTrials new trials (trials already in the storage do
// not count; nTrials ≤ 0 means no limit), one after another, and returns:
//   - nil after nTrials trials, once timeout (> 0) has passed, when Stop was
//     called, or when the sampler has nothing left to try (an exhausted grid);
//   - ctx.Err() when ctx is cancelled (checked between trials; the objective
//     sees ctx through Trial.Context and may stop early — its trial then fails);
//   - an error when the storage fails.
//
// The timeout is checked between trials: a running trial is not interrupted.
// A failed or pruned trial does not stop the study: its error is recorded
// in FrozenTrial.Message and logged.
func (s *Study) Optimize(ctx context.Context, objective Objective, nTrials int, timeout time.Duration) error {
	if objective == nil {
		return errors.New("search: Optimize: objective is nil")
	}
	if nTrials <= 0 && timeout <= 0 && ctx.Done() == nil {
		if _, finite := s.sampler.(finiteSampler); !finite {
			return errors.New("search: Optimize: nTrials ≤ 0 and no timeout or cancellable context: it would never stop; give nTrials > 0, a timeout, or a context that is cancelled")
		}
	}
	s.stop.Store(false)
	if err := s.recover(); err != nil {
		return err
	}
	start := time.Now()
	for i := 0; nTrials <= 0 || i < nTrials; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if timeout > 0 && time.Since(start) >= timeout {
			return nil
		}
		if s.stop.Load() {
			return nil
		}
		if _, err := s.runTrial(ctx, objective); err != nil {
			if errors.Is(err, ErrStudyStopped) {
				return nil
			}
			return err
		}
	}
	return nil
}

// OptimizeUntil runs trials until the study has total trials that finished
// Complete or Pruned, counting those already in the storage and those other
// processes sharing it finish (so N workers may overshoot total by up to
// N−1). This is how a killed study is resumed: run OptimizeUntil again with
// the same total. Failed trials do not count; after 10 consecutive failures
// of its own trials it gives up with an error. It stops early, as Optimize
// does, on timeout, Stop, an exhausted sampler or ctx cancellation.
func (s *Study) OptimizeUntil(ctx context.Context, objective Objective, total int, timeout time.Duration) error {
	if objective == nil {
		return errors.New("search: OptimizeUntil: objective is nil")
	}
	if total <= 0 {
		return fmt.Errorf("search: OptimizeUntil: total %d is invalid; it must be ≥ 1", total)
	}
	s.stop.Store(false)
	if err := s.recover(); err != nil {
		return err
	}
	start := time.Now()
	fails := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if timeout > 0 && time.Since(start) >= timeout {
			return nil
		}
		if s.stop.Load() {
			return nil
		}
		ts, err := s.storage.trials(s.name)
		if err != nil {
			return fmt.Errorf("search: study %q: %w", s.name, err)
		}
		if countStates(ts, Complete, Pruned) >= total {
			return nil
		}
		ft, err := s.runTrial(ctx, objective)
		if err != nil {
			if errors.Is(err, ErrStudyStopped) {
				return nil
			}
			return err
		}
		if ft.State == Fail {
			fails++
			if fails >= maxConsecutiveFailures {
				return fmt.Errorf("search: OptimizeUntil: %d trials in a row failed (last: trial %d: %s); fix the objective and run again",
					fails, ft.Number, ft.Message)
			}
		} else {
			fails = 0
		}
	}
}

func countStates(ts []FrozenTrial, states ...TrialState) int {
	n := 0
	for _, t := range ts {
		for _, st := range states {
			if t.State == st {
				n++
				break
			}
		}
	}
	return n
}

// runTrial asks for a trial, runs the objective on it, and tells the result.
func (s *Study) runTrial(ctx context.Context, objective Objective) (FrozenTrial, error) {
	t, err := s.Ask(ctx)
	if err != nil {
		return FrozenTrial{}, err
	}
	value, oerr := s.callObjective(objective, t)
	return s.Tell(t, value, oerr)
}

// callObjective runs the objective, turning a panic into an error (its
// stack goes to the log, not into the trial's message).
func (s *Study) callObjective(objective Objective, t *Trial) (value float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			value = math.NaN()
			err = fmt.Errorf("objective panicked: %v", r)
			s.logger.Warn("search: objective panicked", "study", s.name, "trial", t.number, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return objective(t)
}

// Ask starts a new trial for an objective run by hand; finish it with Tell.
// It returns ErrStudyStopped when the sampler has nothing left to try.
func (s *Study) Ask(ctx context.Context) (*Trial, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if f, ok := s.sampler.(finiteSampler); ok {
		s.samplerMu.Lock()
		done, err := f.exhausted(s)
		s.samplerMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("search: study %q: %w", s.name, err)
		}
		if done {
			return nil, ErrStudyStopped
		}
	}
	number, started, err := s.storage.createTrial(s.name)
	if err != nil {
		return nil, fmt.Errorf("search: study %q: creating a trial: %w", s.name, err)
	}
	t := &Trial{study: s, number: number, ctx: ctx, started: started,
		internal: map[string]float64{}, dists: map[string]Distribution{},
		userAttrs: map[string]any{}, systemAttrs: map[string]string{}}
	if b, ok := s.sampler.(trialStarter); ok {
		s.samplerMu.Lock()
		err := b.beforeTrial(s, t)
		s.samplerMu.Unlock()
		if err != nil {
			_, ferr := s.finish(t, Fail, math.NaN(), "sampler: "+err.Error())
			return nil, errors.Join(fmt.Errorf("search: study %q, trial %d: %w", s.name, number, err), ferr)
		}
	}
	return t, nil
}

// Tell finishes a trial from Ask with the objective's result: a nil error
// and a finite value complete it; an error wrapping ErrPruned prunes it; any
// other error, NaN or ±Inf fails it. It returns the finished trial.
func (s *Study) Tell(t *Trial, value float64, err error) (FrozenTrial, error) {
	if t == nil || t.study != s {
		return FrozenTrial{}, errors.New("search: Tell: the trial does not belong to this study")
	}
	state, msg := Complete, ""
	switch {
	case err != nil && errors.Is(err, ErrPruned):
		state, msg = Pruned, err.Error()
	case err != nil:
		state, msg = Fail, err.Error()
	case math.IsNaN(value) || math.IsInf(value, 0):
		state, msg = Fail, fmt.Sprintf("objective returned %v; only finite values are allowed", value)
	}
	ft, ferr := s.finish(t, state, value, msg)
	if ferr != nil {
		return ft, ferr
	}
	switch state {
	case Complete:
		s.logger.Info("search: trial finished", "study", s.name, "trial", ft.Number, "value", ft.Value, "params", ft.Params)
	case Pruned:
		s.logger.Info("search: trial pruned", "study", s.name, "trial", ft.Number, "params", ft.Params, "reason", msg)
	case Fail:
		s.logger.Warn("search: trial failed", "study", s.name, "trial", ft.Number, "params", ft.Params, "error", msg)
	}
	for _, cb := range s.callbacks {
		cb(s, ft)
	}
	if a, ok := s.sampler.(trialFinisher); ok {
		s.samplerMu.Lock()
		stop, aerr := a.afterTrial(s, ft)
		s.samplerMu.Unlock()
		if aerr != nil {
			return ft, fmt.Errorf("search: study %q: %w", s.name, aerr)
		}
		if stop {
			s.Stop()
		}
	}
	return ft, nil
}

func (s *Study) finish(t *Trial, state TrialState, value float64, msg string) (FrozenTrial, error) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return FrozenTrial{}, fmt.Errorf("search: trial %d is already finished", t.number)
	}
	t.finished = true
	t.mu.Unlock()
	ft, err := s.storage.finishTrial(s.name, t.number, state, value, msg)
	if err != nil {
		return ft, fmt.Errorf("search: study %q, finishing trial %d: %w", s.name, t.number, err)
	}
	return ft, nil
}

// sample asks the sampler for parameter name of trial t.
func (s *Study) sample(t *Trial, name string, d Distribution) (float64, error) {
	s.samplerMu.Lock()
	defer s.samplerMu.Unlock()
	return s.sampler.Sample(s, t, name, d)
}
