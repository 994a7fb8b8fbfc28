package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
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
	Direction studydata.Direction
	// Sampler proposes parameter values; nil means NewTPESampler(TPEOptions{})
	// with a random seed, Optuna's default.
	Sampler Sampler
	// Storage holds the trials; nil means a new InMemoryStorage. Give a
	// JournalStorage to keep a study on disk and resume it.
	Storage studydata.Storage
	// Logger receives a line per finished trial (Info) and warnings; nil
	// means slog.Default().
	Logger *slog.Logger
	// Callbacks are called, in order, with every trial this Study value
	// finishes (through Optimize, OptimizeUntil or Tell), after it is
	// stored: Optuna's optimize(callbacks=...). Trials finished by other
	// processes sharing the storage are not reported.
	Callbacks []func(*Study, studydata.FrozenTrial)
	// RetryFailed re-enqueues a trial that ends Fail (its objective failed
	// or panicked, or its worker died and it was marked failed) as a new,
	// Waiting trial with the same parameters, which the next Ask of any
	// worker sharing the storage runs first; at most RetryFailed times per
	// original trial (0: never). The retry is recorded in the same change
	// as the failure, with the system attributes failed_trial (the number
	// of the original trial) and retry_history (the numbers of the failed
	// attempts, as a JSON list), as Optuna's RetryFailedTrialCallback makes
	// it. Give every worker of a study the same value.
	RetryFailed int
	// WaitForUnjudged makes a worker wait for Running trials whose worker
	// it cannot judge alive or dead (Storage.UnjudgedTrials: on another
	// machine without a heartbeat, or none recorded) when those are all it
	// would wait for, as long as its context and timeout allow. By default
	// it returns an *UnjudgedError instead, naming them and what to do,
	// since such a wait may never end: their worker may be gone.
	WaitForUnjudged bool
}

// UnjudgedError is what Optimize, OptimizeUntil and Ask return when every
// trial the worker would wait for runs in a worker it cannot judge alive or
// dead (and Config.WaitForUnjudged is not set).
type UnjudgedError struct {
	Study  string
	Trials []studydata.UnjudgedTrial
}

func (e *UnjudgedError) Error() string {
	return fmt.Sprintf("search: study %s waits only for %s; not waiting without end: if that worker is gone, finish the trial as failed "+
		"(mase search fail, or Storage.FinishTrial) and run again; if it still runs, run again once it has finished; "+
		"workers with a heartbeat (mase search --heartbeat, SetHeartbeat) are judged by it",
		quoteName(e.Study), DescribeUnjudged(e.Trials))
}

// DescribeUnjudged names unjudged trials and why each cannot be judged, on
// one line: "trial 7, run by pid 12 on host a1, which this process cannot
// check (…)".
func DescribeUnjudged(ts []studydata.UnjudgedTrial) string {
	var b strings.Builder
	for i, t := range ts {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more (trials", len(ts)-i)
			for _, r := range ts[i:] {
				fmt.Fprintf(&b, " %d", r.Number)
			}
			b.WriteString(")")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "trial %d", t.Number)
		if t.Owner != "" {
			fmt.Fprintf(&b, ", run by %s", t.Owner)
		}
		fmt.Fprintf(&b, ", which this process cannot check (%s)", t.Why)
	}
	return b.String()
}

// UnjudgedNumbers returns the numbers of ts.
func UnjudgedNumbers(ts []studydata.UnjudgedTrial) []int {
	out := make([]int, len(ts))
	for i, t := range ts {
		out[i] = t.Number
	}
	return out
}

// quoteName quotes a study name for a message, its control characters
// escaped.
func quoteName(s string) string { return strconv.Quote(s) }

// Study is an optimisation task: a direction, a sampler and a storage holding
// its trials. A Study is safe for concurrent use; several goroutines may run
// Optimize on it at once (the sampler is called under a lock).
type Study struct {
	name      string
	direction studydata.Direction
	sampler   Sampler
	storage   studydata.Storage
	logger    *slog.Logger
	callbacks []func(*Study, studydata.FrozenTrial)

	retries      int
	waitUnjudged bool

	samplerMu sync.Mutex
	stop      atomic.Bool

	recoverMu   sync.Mutex
	lastRecover time.Time
}

// recoverEvery is how often Optimize and OptimizeUntil look for trials of
// dead workers between trials (and at every try while waiting).
const recoverEvery = time.Second

// waitWarning is how long a worker waits for other workers' running trials
// before it warns that it still does.
const waitWarning = time.Minute

// NewStudy creates the study cfg describes, or resumes it when cfg.Storage
// already holds a study of that name (a journal written by an earlier run):
// its finished trials are kept and feed the sampler, and its Running trials
// whose process on this machine is gone are marked Fail. The recorded
// direction must match cfg.Direction.
func NewStudy(cfg Config) (*Study, error) {
	s := &Study{name: cfg.Name, direction: cfg.Direction, sampler: cfg.Sampler, storage: cfg.Storage, logger: cfg.Logger,
		callbacks: cfg.Callbacks, retries: cfg.RetryFailed, waitUnjudged: cfg.WaitForUnjudged}
	if s.name == "" {
		s.name = "default"
	}
	if s.retries < 0 {
		return nil, fmt.Errorf("search: NewStudy: RetryFailed %d is invalid; it must be ≥ 0 (0: no retry)", s.retries)
	}
	if s.direction != studydata.Minimize && s.direction != studydata.Maximize {
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
		s.storage = storages.NewInMemoryStorage()
	}
	dir, existed, err := s.storage.CreateStudy(s.name, s.direction)
	if err != nil {
		return nil, fmt.Errorf("search: NewStudy(%q): %w", s.name, err)
	}
	if dir != s.direction {
		return nil, fmt.Errorf("search: NewStudy(%q): the storage holds this study with direction %v, but Config.Direction is %v; use the recorded direction or another name",
			s.name, dir, s.direction)
	}
	if existed {
		if _, err := s.recover(); err != nil {
			return nil, err
		}
		if trials, err := s.storage.Trials(s.name); err == nil {
			s.logger.Info("search: resuming study", "study", s.name, "trials", len(trials), "finished", studydata.CountStates(trials, studydata.Complete, studydata.Pruned, studydata.Fail))
		}
		unjudged, err := s.storage.UnjudgedTrials(s.name)
		if err != nil {
			return nil, fmt.Errorf("search: study %q: %w", s.name, err)
		}
		if len(unjudged) > 0 {
			s.logger.Warn("search: the study has running trials whose worker this process cannot check; they are never marked failed by themselves: "+
				"if their worker is gone, finish them as failed (mase search fail, or Storage.FinishTrial)",
				"study", s.name, "trials", UnjudgedNumbers(unjudged), "first", DescribeUnjudged(unjudged[:1]))
		}
	}
	return s, nil
}

// recover marks Fail the Running trials whose process is gone (and
// enqueues their retries); it reports whether it failed any.
func (s *Study) recover() (bool, error) {
	s.recoverMu.Lock()
	s.lastRecover = time.Now()
	s.recoverMu.Unlock()
	failed, err := s.storage.FailStale(s.name, s.retries)
	if err != nil {
		return false, fmt.Errorf("search: study %q: marking crashed trials failed: %w", s.name, err)
	}
	if len(failed) > 0 {
		var numbers, retries []int
		for _, f := range failed {
			numbers = append(numbers, f.Number)
			if f.Retry >= 0 {
				retries = append(retries, f.Retry)
			}
		}
		if len(retries) > 0 {
			s.logger.Warn("search: trials left running by a crashed process were marked failed and enqueued again", "study", s.name, "trials", numbers, "retries", retries)
		} else {
			s.logger.Warn("search: trials left running by a crashed process were marked failed", "study", s.name, "trials", numbers)
		}
	}
	return len(failed) > 0, nil
}

// recoverSometimes runs recover when it has not run for recoverEvery.
func (s *Study) recoverSometimes() error {
	s.recoverMu.Lock()
	due := time.Since(s.lastRecover) >= recoverEvery
	s.recoverMu.Unlock()
	if !due {
		return nil
	}
	_, err := s.recover()
	return err
}

// Storage returns the storage the study keeps its trials in.
func (s *Study) Storage() studydata.Storage { return s.storage }

// Name returns the study's name.
func (s *Study) Name() string { return s.name }

// Direction returns Minimize or Maximize.
func (s *Study) Direction() studydata.Direction { return s.direction }

// Sampler returns the study's sampler.
func (s *Study) Sampler() Sampler { return s.sampler }

// Trials returns a copy of every trial of the study, in number order,
// including those other processes sharing the storage run or ran.
func (s *Study) Trials() ([]studydata.FrozenTrial, error) {
	ts, err := s.storage.Trials(s.name)
	if err != nil {
		return nil, fmt.Errorf("search: study %q: %w", s.name, err)
	}
	for i := range ts {
		ts[i] = ts[i].Clone()
	}
	return ts, nil
}

// history returns the trials without copying; samplers must not modify them.
func (s *Study) history() ([]studydata.FrozenTrial, error) {
	return s.storage.Trials(s.name)
}

// BestTrial returns the complete trial with the best value (the lowest
// number among equals); ErrNoCompleteTrial when there is none.
func (s *Study) BestTrial() (studydata.FrozenTrial, error) {
	ts, err := s.storage.Trials(s.name)
	if err != nil {
		return studydata.FrozenTrial{}, fmt.Errorf("search: study %q: %w", s.name, err)
	}
	best := -1
	for i, t := range ts {
		if t.State != studydata.Complete || math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
			continue // a storage reads a stored non-finite value as failed; this is a second guard
		}
		if best < 0 || s.direction.Better(t.Value, ts[best].Value) {
			best = i
		}
	}
	if best < 0 {
		return studydata.FrozenTrial{}, fmt.Errorf("%w (study %q, %d trials)", ErrNoCompleteTrial, s.name, len(ts))
	}
	return ts[best].Clone(), nil
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
// in FrozenTrial.Message and logged. Waiting trials (retries, EnqueueTrial)
// run before new ones. Trials of dead workers are marked Fail at the start
// and then every second or so, between trials.
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
	if _, err := s.recover(); err != nil {
		return err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for i := 0; nTrials <= 0 || i < nTrials; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil
		}
		if s.stop.Load() {
			return nil
		}
		if err := s.recoverSometimes(); err != nil {
			return err
		}
		if _, err := s.runTrial(ctx, objective, 0, deadline); err != nil {
			if errors.Is(err, ErrStudyStopped) || errors.Is(err, errStopWaiting) {
				return nil
			}
			return err
		}
	}
	return nil
}

// OptimizeUntil runs trials until the study holds total Complete trials,
// counting those already in the storage and those other workers sharing it
// run (Optuna's MaxTrialsCallback(total)); pruned and failed trials do not
// count. Workers never overshoot: a trial starts only while the study's
// complete and running trials are fewer than total, checked under the
// storage's lock; when they are not, the worker waits for the running trials
// of the others (one of them may fail), marking those of dead workers
// failed, and returns once total trials are complete. This is how a killed
// study is resumed: run OptimizeUntil again with the same total. After 10
// consecutive failures of its own trials it gives up with an error. It stops
// early, as Optimize does, on timeout (also while waiting), Stop, an
// exhausted sampler or ctx cancellation.
func (s *Study) OptimizeUntil(ctx context.Context, objective Objective, total int, timeout time.Duration) error {
	if objective == nil {
		return errors.New("search: OptimizeUntil: objective is nil")
	}
	if total <= 0 {
		return fmt.Errorf("search: OptimizeUntil: total %d is invalid; it must be ≥ 1", total)
	}
	s.stop.Store(false)
	if _, err := s.recover(); err != nil {
		return err
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	fails := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil
		}
		if s.stop.Load() {
			return nil
		}
		if err := s.recoverSometimes(); err != nil {
			return err
		}
		ft, err := s.runTrial(ctx, objective, total, deadline)
		if err != nil {
			if errors.Is(err, ErrStudyStopped) || errors.Is(err, errStopWaiting) {
				return nil
			}
			return err
		}
		if ft.State == studydata.Fail {
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

// runTrial asks for a trial, runs the objective on it, and tells the result.
func (s *Study) runTrial(ctx context.Context, objective Objective, limit int, deadline time.Time) (studydata.FrozenTrial, error) {
	t, err := s.ask(ctx, limit, deadline, true)
	if err != nil {
		return studydata.FrozenTrial{}, err
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

// Ask starts a trial for an objective run by hand; finish it with Tell. It
// starts the oldest Waiting trial (a retry, or one EnqueueTrial added), if
// any, else a new one. It returns ErrStudyStopped when the sampler has
// nothing left to try. When every grid point left is being evaluated by
// other workers it waits (until ctx is done) for one of them to finish or
// fail.
func (s *Study) Ask(ctx context.Context) (*Trial, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return s.ask(ctx, 0, time.Time{}, false)
}

// errStopWaiting: the worker stopped waiting to start a trial (its timeout
// passed, or Stop was called).
var errStopWaiting = errors.New("search: stopped waiting for running trials to finish")

// ask starts a trial (StartTrial with the study's plan: at most limit
// complete and running trials when limit > 0, the grid's point). When the
// plan says to wait, it marks the trials of dead workers failed and tries
// again, every 20 ms at first and then up to every second, until ctx is done,
// the deadline (if not zero) passes, or, when stoppable, Stop is called.
// Running trials whose worker cannot be judged are reported at once; when
// they are all it waits for, it returns an *UnjudgedError instead of
// waiting (unless Config.WaitForUnjudged).
func (s *Study) ask(ctx context.Context, limit int, deadline time.Time, stoppable bool) (*Trial, error) {
	delay := 20 * time.Millisecond
	var waitStart time.Time
	reported := map[int]bool{}
	for warned := false; ; {
		t, err := s.start(ctx, limit)
		if !errors.Is(err, studydata.ErrWait) {
			return t, err
		}
		switch {
		case waitStart.IsZero():
			waitStart = time.Now()
			s.logger.Info("search: waiting for the running trials of other workers before starting another", "study", s.name)
		case !warned && time.Since(waitStart) >= waitWarning:
			warned = true
			var running []int
			if ts, err := s.storage.Trials(s.name); err == nil {
				for _, t := range ts {
					if t.State == studydata.Running {
						running = append(running, t.Number)
					}
				}
			}
			s.logger.Warn("search: still waiting for running trials of other workers; each is marked failed once its worker's process is gone (on another machine: once its heartbeat stops)",
				"study", s.name, "waited", time.Since(waitStart).Round(time.Second), "running", running)
		}
		recovered, err := s.recover()
		if err != nil {
			return nil, err
		}
		if recovered {
			continue
		}
		if err := s.checkUnjudged(reported); err != nil {
			return nil, err
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		if (!deadline.IsZero() && !time.Now().Before(deadline)) || (stoppable && s.stop.Load()) {
			return nil, errStopWaiting
		}
		delay = min(2*delay, time.Second)
	}
}

// checkUnjudged looks, while a worker waits, for the running trials it
// cannot judge: it returns an *UnjudgedError when they are all the running
// trials (unless Config.WaitForUnjudged), and otherwise warns of each once
// (reported holds those already reported).
func (s *Study) checkUnjudged(reported map[int]bool) error {
	unjudged, err := s.storage.UnjudgedTrials(s.name)
	if err != nil {
		return fmt.Errorf("search: study %q: %w", s.name, err)
	}
	if len(unjudged) == 0 {
		return nil
	}
	if !s.waitUnjudged {
		ts, err := s.storage.Trials(s.name)
		if err != nil {
			return fmt.Errorf("search: study %q: %w", s.name, err)
		}
		if studydata.CountStates(ts, studydata.Running) <= len(unjudged) {
			return &UnjudgedError{Study: s.name, Trials: unjudged}
		}
	}
	var fresh []studydata.UnjudgedTrial
	for _, t := range unjudged {
		if !reported[t.Number] {
			reported[t.Number] = true
			fresh = append(fresh, t)
		}
	}
	if len(fresh) > 0 {
		s.logger.Warn("search: waiting, among others, for running trials whose worker this process cannot check; they are never marked failed by themselves: "+
			"if their worker is gone, finish them as failed (mase search fail, or Storage.FinishTrial)",
			"study", s.name, "trials", UnjudgedNumbers(fresh), "first", DescribeUnjudged(fresh[:1]))
	}
	return nil
}

// plan is the StartPlan of the study's trials: at most limit complete and
// running trials (limit > 0), and the sampler's own (the grid's point).
func (s *Study) plan(limit int) studydata.StartPlan {
	starter, _ := s.sampler.(trialStarter)
	if limit <= 0 && starter == nil {
		return nil
	}
	return func(ts []studydata.FrozenTrial, waiting *studydata.FrozenTrial) (map[string]string, error) {
		if limit > 0 {
			complete, running := 0, 0
			for i := range ts {
				switch ts[i].State {
				case studydata.Complete:
					complete++
				case studydata.Running:
					running++
				}
			}
			if complete >= limit {
				return nil, ErrStudyStopped
			}
			if complete+running >= limit {
				return nil, studydata.ErrWait
			}
		}
		if starter != nil {
			return starter.startAttrs(s, ts, waiting)
		}
		return nil, nil
	}
}

// start starts one trial, or returns ErrStudyStopped or ErrWait.
func (s *Study) start(ctx context.Context, limit int) (*Trial, error) {
	plan := s.plan(limit)
	_, locked := s.sampler.(trialStarter)
	if locked { // the plan uses the sampler's state
		s.samplerMu.Lock()
	}
	ft, err := s.storage.StartTrial(s.name, plan)
	if locked {
		s.samplerMu.Unlock()
	}
	if errors.Is(err, ErrStudyStopped) || errors.Is(err, studydata.ErrWait) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("search: study %q: starting a trial: %w", s.name, err)
	}
	t := &Trial{study: s, number: ft.Number, ctx: ctx, started: ft.Started,
		internal: maps.Clone(ft.InternalParams), dists: maps.Clone(ft.Distributions), preset: map[string]bool{},
		userAttrs: maps.Clone(ft.UserAttrs), systemAttrs: maps.Clone(ft.SystemAttrs)}
	for name := range t.dists {
		t.preset[name] = true
	}
	if t.internal == nil {
		t.internal, t.dists = map[string]float64{}, map[string]studydata.Distribution{}
	}
	if t.userAttrs == nil {
		t.userAttrs = map[string]any{}
	}
	if t.systemAttrs == nil {
		t.systemAttrs = map[string]string{}
	}
	if fp, ok := ft.SystemAttrs[studydata.FixedParamsAttr]; ok {
		if err := json.Unmarshal([]byte(fp), &t.fixed); err != nil {
			s.logger.Warn("search: ignoring the fixed parameters of an enqueued trial: they are not a JSON object",
				"study", s.name, "trial", ft.Number, "fixed_params", fp, "error", err)
		}
	}
	if _, retry := ft.SystemAttrs[studydata.FailedTrialAttr]; retry || len(t.fixed) > 0 {
		s.logger.Info("search: running an enqueued trial", "study", s.name, "trial", ft.Number, "params", ft.Params,
			"failed_trial", ft.SystemAttrs[studydata.FailedTrialAttr], "fixed_params", ft.SystemAttrs[studydata.FixedParamsAttr])
	}
	return t, nil
}

// EnqueueTrial adds a Waiting trial that the next Ask, of any worker sharing
// the storage, runs before any new trial, and returns its number (Optuna's
// enqueue_trial). params fixes parameters by name, with the values the
// objective is to get (a float, an int, a choice); a parameter it lacks is
// sampled as usual. The values must be JSON-encodable: they are recorded as
// the system attribute fixed_params.
func (s *Study) EnqueueTrial(params map[string]any) (int, error) {
	pj, err := json.Marshal(params)
	if err != nil {
		return 0, fmt.Errorf("search: EnqueueTrial: the parameters must be JSON-encodable (nil, bool, string, numbers): %w", err)
	}
	if params == nil {
		pj = []byte("{}")
	}
	n, err := s.storage.EnqueueTrial(s.name, studydata.FrozenTrial{State: studydata.Waiting, SystemAttrs: map[string]string{studydata.FixedParamsAttr: string(pj)}})
	if err != nil {
		return 0, fmt.Errorf("search: study %q: EnqueueTrial: %w", s.name, err)
	}
	return n, nil
}

// Tell finishes a trial from Ask with the objective's result: a nil error
// and a finite value complete it; an error wrapping ErrPruned prunes it; any
// other error, NaN or ±Inf fails it. It returns the finished trial.
func (s *Study) Tell(t *Trial, value float64, err error) (studydata.FrozenTrial, error) {
	if t == nil || t.study != s {
		return studydata.FrozenTrial{}, errors.New("search: Tell: the trial does not belong to this study")
	}
	state, msg := studydata.Complete, ""
	switch {
	case err != nil && errors.Is(err, ErrPruned):
		state, msg = studydata.Pruned, err.Error()
	case err != nil:
		state, msg = studydata.Fail, err.Error()
	case math.IsNaN(value) || math.IsInf(value, 0):
		state, msg = studydata.Fail, fmt.Sprintf("objective returned %v; only finite values are allowed", value)
	}
	ft, ferr := s.finish(t, state, value, msg)
	if ferr != nil {
		return ft, ferr
	}
	switch state {
	case studydata.Complete:
		s.logger.Info("search: trial finished", "study", s.name, "trial", ft.Number, "value", ft.Value, "params", ft.Params)
	case studydata.Pruned:
		s.logger.Info("search: trial pruned", "study", s.name, "trial", ft.Number, "params", ft.Params, "reason", msg)
	case studydata.Fail:
		s.logger.Warn("search: trial failed", "study", s.name, "trial", ft.Number, "params", ft.Params, "error", msg)
	}
	for _, cb := range s.callbacks {
		cb(s, ft)
	}
	return ft, nil
}

func (s *Study) finish(t *Trial, state studydata.TrialState, value float64, msg string) (studydata.FrozenTrial, error) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return studydata.FrozenTrial{}, fmt.Errorf("search: trial %d is already finished", t.number)
	}
	t.finished = true
	t.mu.Unlock()
	ft, retry, err := s.storage.FinishTrial(s.name, t.number, state, value, msg, s.retries)
	if err != nil {
		return ft, fmt.Errorf("search: study %q, finishing trial %d: %w", s.name, t.number, err)
	}
	if retry != nil {
		s.logger.Warn("search: failed trial enqueued again with the same parameters", "study", s.name, "trial", ft.Number,
			"retry", retry.Number, "retry_history", retry.SystemAttrs[studydata.RetryHistoryAttr])
	}
	return ft, nil
}

// sample asks the sampler for parameter name of trial t.
func (s *Study) sample(t *Trial, name string, d studydata.Distribution) (float64, error) {
	s.samplerMu.Lock()
	defer s.samplerMu.Unlock()
	return s.sampler.Sample(s, t, name, d)
}
