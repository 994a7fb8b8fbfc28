package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gomase/gomase/mase/search/studydata"
)

// TPEOptions configures NewTPESampler. The zero value gives Optuna's
// defaults (with seed 0).
type TPEOptions struct {
	// Seed makes the sampler deterministic: the same seed and the same
	// objective give the same parameters.
	Seed int64
	// NStartupTrials is the number of complete or pruned trials sampled at
	// random before TPE starts: 0 means Optuna's 10, a negative value none.
	NStartupTrials int
	// NEICandidates is the number of candidates drawn from l(x) per
	// parameter, of which the best l(x)/g(x) is taken: 0 means 24.
	NEICandidates int
	// PriorWeight is the weight of the prior component: 0 means 1.0.
	PriorWeight float64
	// NoPrior leaves out the prior component (Optuna's consider_prior=False);
	// an estimator with no observation still uses it.
	NoPrior bool
	// NoMagicClip disables the lower bound on bandwidths (consider_magic_clip=False).
	NoMagicClip bool
	// ConsiderEndpoints lets the range bounds widen the outermost kernels.
	ConsiderEndpoints bool
	// NormalizedDensity scores candidates with properly normalised kernel
	// densities, as Optuna ≥ 3.5 does. By default the sampler reproduces
	// Optuna 3.1–3.4 (3.1 is Debian 12's python3-optuna, the benchmark peer),
	// whose truncated-Gaussian log density omits the −log σ term
	// (optuna#5109, changed in Optuna 3.5): each kernel then counts in the
	// l(x)/g(x) score as if its weight were multiplied by its bandwidth.
	// Sampling from l(x) is the same either way. On the peer benchmark the
	// default finds better values (docs/search.md).
	NormalizedDensity bool
	// Gamma gives the number of "good" trials among n; nil means DefaultGamma.
	Gamma func(n int) int
	// Weights gives the weights of n observations, oldest first; nil means
	// DefaultWeights.
	Weights func(n int) []float64
}

// DefaultGamma is Optuna's default_gamma: min(⌈0.1·n⌉, 25).
func DefaultGamma(n int) int {
	return min(int(math.Ceil(0.1*float64(n))), 25)
}

// DefaultWeights is Optuna's default_weights: all ones below 25
// observations; beyond, the newest 25 weigh 1 and the older ones ramp
// linearly from 1/n up to 1.
func DefaultWeights(n int) []float64 {
	w := make([]float64, n)
	if n < 25 {
		for i := range w {
			w[i] = 1
		}
		return w
	}
	ramp := n - 25
	for i := range ramp { // numpy.linspace(1/n, 1, n−25)
		if ramp == 1 {
			w[i] = 1 / float64(n)
		} else {
			w[i] = 1/float64(n) + (1-1/float64(n))*float64(i)/float64(ramp-1)
		}
	}
	for i := ramp; i < n; i++ {
		w[i] = 1
	}
	return w
}

// TPESampler is Optuna's default sampler, the univariate Tree-structured
// Parzen Estimator: after NStartupTrials random trials, for each parameter
// it splits the finished trials into the best γ(n) ("below") and the rest
// ("above"), fits a Parzen estimator l(x) to the first and g(x) to the second
// (weighted mixtures of truncated Gaussians, or smoothed category counts,
// each with a prior component), draws NEICandidates values from l and keeps
// the one maximising log l(x) − log g(x).
//
// Complete trials rank by value; pruned trials rank after every complete
// one (gomase records no intermediate values, so all pruned trials tie, as
// Optuna's pruned trials with no report do); failed and running trials are
// ignored. A past value counts for a parameter only if it was suggested with
// the same kind of distribution (same log flag; for categoricals, a value
// among the current choices) and lies within the current range.
type TPESampler struct {
	rng    *rand.Rand
	random *RandomSampler
	opts   TPEOptions
	params parzenParams
}

// NewTPESampler returns a TPESampler; it fails on invalid options.
func NewTPESampler(opts TPEOptions) (*TPESampler, error) {
	switch {
	case opts.NEICandidates < 0:
		return nil, fmt.Errorf("search: NewTPESampler: NEICandidates %d is invalid; it must be ≥ 1 (or 0 for 24)", opts.NEICandidates)
	case opts.PriorWeight < 0 || math.IsNaN(opts.PriorWeight) || math.IsInf(opts.PriorWeight, 0):
		return nil, fmt.Errorf("search: NewTPESampler: PriorWeight %v is invalid; it must be finite and > 0 (or 0 for 1.0)", opts.PriorWeight)
	}
	if opts.NStartupTrials == 0 {
		opts.NStartupTrials = 10
	} else if opts.NStartupTrials < 0 {
		opts.NStartupTrials = 0
	}
	if opts.NEICandidates == 0 {
		opts.NEICandidates = 24
	}
	if opts.PriorWeight == 0 {
		opts.PriorWeight = 1
	}
	if opts.Gamma == nil {
		opts.Gamma = DefaultGamma
	}
	if opts.Weights == nil {
		opts.Weights = DefaultWeights
	}
	return &TPESampler{
		rng:    newRNG(opts.Seed),
		random: NewRandomSampler(opts.Seed),
		opts:   opts,
		params: parzenParams{
			prior:             !opts.NoPrior,
			priorWeight:       opts.PriorWeight,
			magicClip:         !opts.NoMagicClip,
			considerEndpoints: opts.ConsiderEndpoints,
			weights:           opts.Weights,
			unscaledDensity:   !opts.NormalizedDensity,
		},
	}, nil
}

// observation is one finished trial as TPE ranks it: lexicographically by
// (step, score), lower is better; x is its value of the sampled parameter.
type observation struct {
	step, score float64
	x           float64
	has         bool
}

// Sample draws the parameter name as described on TPESampler.
func (s *TPESampler) Sample(study *Study, trial *Trial, name string, dist studydata.Distribution) (float64, error) {
	hist, err := study.history()
	if err != nil {
		return 0, err
	}
	sign := 1.0
	if study.Direction() == studydata.Maximize {
		sign = -1
	}
	obs := make([]observation, 0, len(hist))
	for i := range hist {
		t := &hist[i]
		var o observation
		switch t.State {
		case studydata.Complete:
			o.step, o.score = math.Inf(-1), sign*t.Value
		case studydata.Pruned:
			o.step, o.score = 1, 0
		default:
			continue
		}
		if d, ok := t.Distributions[name]; ok {
			o.x, o.has = compatibleValue(d, t.InternalParams[name], dist)
		}
		obs = append(obs, o)
	}
	n := len(obs)
	if n < s.opts.NStartupTrials {
		return s.random.Sample(study, trial, name, dist)
	}
	nBelow := max(0, min(n, s.opts.Gamma(n)))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		oa, ob := obs[order[a]], obs[order[b]]
		if oa.step != ob.step {
			return oa.step < ob.step
		}
		return oa.score < ob.score
	})
	isBelow := make([]bool, n)
	for _, i := range order[:nBelow] {
		isBelow[i] = true
	}
	var below, above []float64
	for i, o := range obs {
		if !o.has {
			continue
		}
		if isBelow[i] {
			below = append(below, o.x)
		} else {
			above = append(above, o.x)
		}
	}
	l, err := newParzen(below, dist, s.params)
	if err != nil {
		return 0, err
	}
	g, err := newParzen(above, dist, s.params)
	if err != nil {
		return 0, err
	}
	best, bestScore := math.NaN(), math.Inf(-1)
	for i := range s.opts.NEICandidates {
		x := l.sample(s.rng)
		score := l.logPdf(x) - g.logPdf(x)
		if i == 0 || score > bestScore {
			best, bestScore = x, score
		}
	}
	return best, nil
}

// compatibleValue returns a past trial's value x (with distribution old) in
// the internal representation of dist, if it is comparable.
func compatibleValue(old studydata.Distribution, x float64, dist studydata.Distribution) (float64, bool) {
	switch d := dist.(type) {
	case studydata.FloatDistribution:
		o, ok := old.(studydata.FloatDistribution)
		return x, ok && o.Log == d.Log && x >= d.Low && x <= d.High
	case studydata.IntDistribution:
		o, ok := old.(studydata.IntDistribution)
		return x, ok && o.Log == d.Log && x >= float64(d.Low) && x <= float64(d.High)
	case studydata.CategoricalDistribution:
		o, ok := old.(studydata.CategoricalDistribution)
		if !ok {
			return 0, false
		}
		if o.Equal(d) {
			return x, true
		}
		i := d.Index(o.ToExternal(x))
		return float64(i), i >= 0
	}
	return 0, false
}
