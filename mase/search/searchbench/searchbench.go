// Package searchbench runs gomase's search samplers on the three objectives
// of the Optuna peer benchmark (shared/bench/optuna_peer.py): a 5-D sphere,
// a 4-D Rosenbrock and a NAS-like mixed space, with the same definitions,
// and reports median best-so-far values and time per trial in the peer's
// JSON shape.
package searchbench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/gomase/gomase/mase/search"
)

// Objective is a named benchmark objective.
type Objective struct {
	Name string
	F    search.Objective
}

// Sphere5 is Σ (x_i − 1)², x_i ∈ [−5, 5], i < 5.
func Sphere5(t *search.Trial) (float64, error) {
	s := 0.0
	for i := range 5 {
		x, err := t.SuggestFloat(fmt.Sprintf("x%d", i), -5, 5)
		if err != nil {
			return 0, err
		}
		s += (x - 1) * (x - 1)
	}
	return s, nil
}

// Rosenbrock4 is Σ 100 (x_{i+1} − x_i²)² + (1 − x_i)², x ∈ [−2, 2]⁴.
func Rosenbrock4(t *search.Trial) (float64, error) {
	var x [4]float64
	for i := range x {
		v, err := t.SuggestFloat(fmt.Sprintf("x%d", i), -2, 2)
		if err != nil {
			return 0, err
		}
		x[i] = v
	}
	s := 0.0
	for i := range 3 {
		s += 100*(x[i+1]-x[i]*x[i])*(x[i+1]-x[i]*x[i]) + (1-x[i])*(1-x[i])
	}
	return s, nil
}

// Mixed is the NAS-like space: four categorical sizes and a log-uniform
// learning rate; its minimum 0 is at layers 4, hidden 256, inter 1024,
// heads 4, lr 1e-3.
func Mixed(t *search.Trial) (float64, error) {
	a, err := search.Categorical(t, "layers", []int{2, 4, 8})
	if err != nil {
		return 0, err
	}
	h, err := search.Categorical(t, "hidden", []int{128, 192, 256, 384, 512})
	if err != nil {
		return 0, err
	}
	in, err := search.Categorical(t, "inter", []int{512, 768, 1024, 1536, 2048})
	if err != nil {
		return 0, err
	}
	n, err := search.Categorical(t, "heads", []int{2, 4, 8, 16})
	if err != nil {
		return 0, err
	}
	lr, err := t.SuggestFloat("lr", 1e-5, 1e-1, search.WithLog())
	if err != nil {
		return 0, err
	}
	heads := 0.5
	if n == 4 {
		heads = 0
	}
	l := math.Log10(lr) + 3
	return l*l + math.Abs(float64(a)-4)/4 + math.Abs(float64(h)-256)/256 + math.Abs(float64(in)-1024)/1024 + heads, nil
}

// Objectives returns the peer's objectives in its order.
func Objectives() []Objective {
	return []Objective{{"sphere5", Sphere5}, {"rosenbrock4", Rosenbrock4}, {"mixed", Mixed}}
}

// Samplers are the sampler names Run knows, in the peer's order.
var Samplers = []string{"tpe", "random"}

// NewSampler returns the named sampler seeded with seed: "tpe", "random", or
// "tpe-normalized" (TPE scoring with Optuna ≥ 3.5's normalised densities, see
// TPEOptions.NormalizedDensity).
func NewSampler(name string, seed int64) (search.Sampler, error) {
	switch name {
	case "tpe":
		return search.NewTPESampler(search.TPEOptions{Seed: seed})
	case "tpe-normalized":
		return search.NewTPESampler(search.TPEOptions{Seed: seed, NormalizedDensity: true})
	case "random":
		return search.NewRandomSampler(seed), nil
	}
	return nil, fmt.Errorf("searchbench: unknown sampler %q (allowed: tpe, tpe-normalized, random)", name)
}

// Curve runs one study of trials trials and returns its best-so-far values
// and its time per trial.
func Curve(obj search.Objective, sampler search.Sampler, trials int) ([]float64, time.Duration, error) {
	st, err := search.NewStudy(search.Config{Sampler: sampler, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	if err := st.Optimize(context.Background(), obj, trials, 0); err != nil {
		return nil, 0, err
	}
	perTrial := time.Since(t0) / time.Duration(trials)
	ts, err := st.Trials()
	if err != nil {
		return nil, 0, err
	}
	best, curve := math.Inf(1), make([]float64, 0, len(ts))
	for _, t := range ts {
		if t.State != search.Complete {
			return nil, 0, fmt.Errorf("trial %d ended %v: %s", t.Number, t.State, t.Message)
		}
		best = math.Min(best, t.Value)
		curve = append(curve, best)
	}
	return curve, perTrial, nil
}

// Result is one objective × sampler line of the report, as the peer prints it.
type Result struct {
	Best25     float64 `json:"best@25"`
	Best50     float64 `json:"best@50"`
	Best100    float64 `json:"best@100"`
	MsPerTrial float64 `json:"ms_per_trial"`
}

// PerSeed runs like Run but returns, for each "<objective>_<sampler>", the
// best value after trials trials of each seed 0..seeds−1 (for a rank test
// against the peer's per-seed values rather than a median alone).
func PerSeed(trials, seeds int, samplers []string) (map[string][]float64, error) {
	if samplers == nil {
		samplers = Samplers
	}
	res := map[string][]float64{}
	for _, obj := range Objectives() {
		for _, sname := range samplers {
			for seed := range seeds {
				sampler, err := NewSampler(sname, int64(seed))
				if err != nil {
					return nil, err
				}
				c, _, err := Curve(obj.F, sampler, trials)
				if err != nil {
					return nil, fmt.Errorf("searchbench: %s/%s seed %d: %w", obj.Name, sname, seed, err)
				}
				res[obj.Name+"_"+sname] = append(res[obj.Name+"_"+sname], c[len(c)-1])
			}
		}
	}
	return res, nil
}

// Run runs every objective with each of samplers (nil means Samplers) for
// seeds 0..seeds−1 and returns the report: {"gomase": ..., "trials": N,
// "seeds": S, "<objective>_<sampler>": Result, ...}. best@100 is taken at
// min(100, trials).
func Run(trials, seeds int, samplers []string) (map[string]any, error) {
	if samplers == nil {
		samplers = Samplers
	}
	if trials < 25 || seeds < 1 {
		return nil, fmt.Errorf("searchbench: trials %d and seeds %d are invalid; need trials ≥ 25 and seeds ≥ 1", trials, seeds)
	}
	res := map[string]any{"gomase": "mase/search " + runtime.Version(), "trials": trials, "seeds": seeds}
	for _, obj := range Objectives() {
		for _, sname := range samplers {
			var curves [][]float64
			var tpt []float64
			for seed := range seeds {
				sampler, err := NewSampler(sname, int64(seed))
				if err != nil {
					return nil, err
				}
				c, d, err := Curve(obj.F, sampler, trials)
				if err != nil {
					return nil, fmt.Errorf("searchbench: %s/%s seed %d: %w", obj.Name, sname, seed, err)
				}
				curves = append(curves, c)
				tpt = append(tpt, float64(d)/float64(time.Millisecond))
			}
			med := func(k int) float64 {
				v := make([]float64, len(curves))
				for i, c := range curves {
					v[i] = c[k-1]
				}
				return Median(v)
			}
			res[obj.Name+"_"+sname] = Result{med(25), med(min(50, trials)), med(min(100, trials)), Median(tpt)}
		}
	}
	return res, nil
}

// Median is Python's statistics.median: the middle value, or the mean of
// the two middle values.
func Median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
