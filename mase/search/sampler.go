package search

import (
	"math"
	"math/rand/v2"

	"github.com/gomase/gomase/mase/search/studydata"
)

// Sampler proposes parameter values. Sample is called once per parameter per
// trial (the first time the objective suggests it), never concurrently for
// one study, and returns a value in dist's internal representation (see
// Distribution). It may read the study's trials with Study.Trials.
//
// RandomSampler, GridSampler and TPESampler implement it.
type Sampler interface {
	Sample(study *Study, trial *Trial, name string, dist studydata.Distribution) (float64, error)
}

// trialStarter is a sampler that prepares each trial (the grid picks its
// point). startAttrs runs under the storage's lock as the trial starts (see
// StartPlan), with the study's trials and the Waiting trial being started
// (nil for a new one); it returns the system attributes to record with the
// trial, ErrStudyStopped, or ErrWait.
type trialStarter interface {
	startAttrs(s *Study, trials []studydata.FrozenTrial, waiting *studydata.FrozenTrial) (map[string]string, error)
}

// finiteSampler is a sampler that can run out of points (its startAttrs
// then returns ErrStudyStopped).
type finiteSampler interface {
	finite()
}

// newRNG returns the generator of a sampler seeded with seed.
func newRNG(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
}

// RandomSampler draws every parameter independently and uniformly: floats
// uniformly in [low, high) (in log space for log parameters), ints and
// stepped floats uniformly over their values (log ints: log-uniformly), and
// categoricals uniformly over the choices — Optuna's RandomSampler.
type RandomSampler struct {
	rng *rand.Rand
}

// NewRandomSampler returns a RandomSampler whose draws depend only on seed.
func NewRandomSampler(seed int64) *RandomSampler {
	return &RandomSampler{rng: newRNG(seed)}
}

// Sample draws a value of dist; it ignores the study's history.
func (r *RandomSampler) Sample(_ *Study, _ *Trial, _ string, dist studydata.Distribution) (float64, error) {
	return sampleUniform(r.rng, dist), nil
}

// sampleUniform is Optuna's uniform draw in the transformed space: a log
// parameter is drawn in log space, a stepped one in [low − step/2,
// high + step/2] and rounded onto the grid.
func sampleUniform(rng *rand.Rand, dist studydata.Distribution) float64 {
	switch d := dist.(type) {
	case studydata.FloatDistribution:
		switch {
		case d.Single():
			return d.Low
		case d.Log:
			lo, hi := math.Log(d.Low), math.Log(d.High)
			return math.Min(math.Exp(lo+rng.Float64()*(hi-lo)), math.Nextafter(d.High, math.Inf(-1)))
		case d.Step > 0:
			x := d.Low - d.Step/2 + rng.Float64()*(d.High-d.Low+d.Step)
			return roundToStep(x, d.Low, d.High, d.Step)
		default:
			return math.Min(d.Low+rng.Float64()*(d.High-d.Low), math.Nextafter(d.High, math.Inf(-1)))
		}
	case studydata.IntDistribution:
		lo, hi := float64(d.Low), float64(d.High)
		if d.Log {
			a, b := math.Log(lo-0.5), math.Log(hi+0.5)
			return clamp(math.RoundToEven(math.Exp(a+rng.Float64()*(b-a))), lo, hi)
		}
		q := float64(d.Step)
		x := lo - q/2 + rng.Float64()*(hi-lo+q)
		return roundToStep(x, lo, hi, q)
	case studydata.CategoricalDistribution:
		return float64(rng.IntN(len(d.Choices)))
	}
	return math.NaN()
}

// roundToStep rounds x onto low + k·step and clamps it to [low, high].
func roundToStep(x, low, high, step float64) float64 {
	return clamp(math.RoundToEven((x-low)/step)*step+low, low, high)
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }
