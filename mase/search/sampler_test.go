package search_test

import (
	"context"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/searchbench"
	"github.com/gomase/gomase/mase/search/studydata"
)

// paramsSequence runs n trials and returns each trial's parameters.
func paramsSequence(t *testing.T, sampler search.Sampler, obj search.Objective, n int) []map[string]any {
	t.Helper()
	s := searchtest.NewStudy(t, search.Config{Sampler: sampler})
	if err := s.Optimize(context.Background(), obj, n, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	out := make([]map[string]any, len(ts))
	for i, tr := range ts {
		out[i] = tr.Params
	}
	return out
}

func TestSamplersReproducible(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(seed int64) search.Sampler
	}{
		{"random", func(seed int64) search.Sampler { return search.NewRandomSampler(seed) }},
		{"tpe", func(seed int64) search.Sampler { return searchtest.MustTPE(t, search.TPEOptions{Seed: seed}) }},
		{"tpe-normalized", func(seed int64) search.Sampler {
			return searchtest.MustTPE(t, search.TPEOptions{Seed: seed, NormalizedDensity: true})
		}},
	} {
		a := paramsSequence(t, c.new(42), searchtest.MixedObjective(false, false), 30)
		b := paramsSequence(t, c.new(42), searchtest.MixedObjective(false, false), 30)
		d := paramsSequence(t, c.new(43), searchtest.MixedObjective(false, false), 30)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs with seed 42 differ", c.name)
		}
		if reflect.DeepEqual(a, d) {
			t.Errorf("%s: seeds 42 and 43 give the same parameters", c.name)
		}
	}
}

func TestRandomSamplerCoverage(t *testing.T) {
	seq := paramsSequence(t, search.NewRandomSampler(1), searchtest.MixedObjective(false, false), 400)
	ks, cs := map[int]int{}, map[string]int{}
	logSmall := 0
	for _, p := range seq {
		ks[p["k"].(int)]++
		cs[p["c"].(string)]++
		if p["lr"].(float64) < 1e-3 {
			logSmall++
		}
		if n := p["n"].(int); n < 1 || n > 64 {
			t.Fatalf("n = %d out of [1, 64]", n)
		}
	}
	if !reflect.DeepEqual(slices.Sorted(maps.Keys(ks)), []int{0, 4, 8, 12, 16, 20}) {
		t.Errorf("k values %v, want all of 0, 4, …, 20", ks)
	}
	for k, n := range ks {
		if n < 400/6/2 {
			t.Errorf("k=%d drawn %d times of 400: not uniform", k, n)
		}
	}
	if len(cs) != 3 {
		t.Errorf("choices drawn: %v", cs)
	}
	// Log-uniform on [1e-5, 1e-1]: half the draws below 1e-3.
	if logSmall < 150 || logSmall > 250 {
		t.Errorf("%d of 400 log-uniform draws below 1e-3, want about 200", logSmall)
	}
}

// TestTPEIgnoresFailedTrials: failed trials do not end TPE's random start-up,
// so with every trial failing TPE draws exactly what RandomSampler does;
// pruned trials do count.
func TestTPEIgnoresFailedTrials(t *testing.T) {
	rnd := paramsSequence(t, search.NewRandomSampler(5), searchtest.MixedObjective(true, false), 25)
	tpe := paramsSequence(t, searchtest.MustTPE(t, search.TPEOptions{Seed: 5}), searchtest.MixedObjective(true, false), 25)
	if !reflect.DeepEqual(rnd, tpe) {
		t.Error("with every trial failed, TPE should stay in its random start-up")
	}
	rnd = paramsSequence(t, search.NewRandomSampler(5), searchtest.MixedObjective(false, true), 25)
	tpe = paramsSequence(t, searchtest.MustTPE(t, search.TPEOptions{Seed: 5}), searchtest.MixedObjective(false, true), 25)
	if !reflect.DeepEqual(rnd[:10], tpe[:10]) || reflect.DeepEqual(rnd[10:], tpe[10:]) {
		t.Error("pruned trials should count: TPE should leave its start-up after 10")
	}
}

func bestOf(t *testing.T, sampler search.Sampler, dir studydata.Direction, obj search.Objective, n int) float64 {
	t.Helper()
	s := searchtest.NewStudy(t, search.Config{Sampler: sampler, Direction: dir})
	if err := s.Optimize(context.Background(), obj, n, 0); err != nil {
		t.Fatal(err)
	}
	bt, err := s.BestTrial()
	if err != nil {
		t.Fatal(err)
	}
	return bt.Value
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// TestTPEBeatsRandom: on a 5-D searchbench.Sphere5, over seeds 0..8 and 100 trials, TPE's
// median best value is far below Random's (typically 0.5 against 7).
func TestTPEBeatsRandom(t *testing.T) {
	var tpe, tpeN, rnd []float64
	for seed := range int64(9) {
		tpe = append(tpe, bestOf(t, searchtest.MustTPE(t, search.TPEOptions{Seed: seed}), studydata.Minimize, searchbench.Sphere5, 100))
		tpeN = append(tpeN, bestOf(t, searchtest.MustTPE(t, search.TPEOptions{Seed: seed, NormalizedDensity: true}), studydata.Minimize, searchbench.Sphere5, 100))
		rnd = append(rnd, bestOf(t, search.NewRandomSampler(seed), studydata.Minimize, searchbench.Sphere5, 100))
	}
	mt, mn, mr := median(tpe), median(tpeN), median(rnd)
	t.Logf("median best of 100 trials: TPE %.3f, TPE (normalised density) %.3f, Random %.3f", mt, mn, mr)
	if !(mt < mr/3) || !(mn < mr/2) {
		t.Errorf("TPE does not beat Random: TPE %.3f, TPE normalised %.3f, Random %.3f", mt, mn, mr)
	}
	// Maximising the negated searchbench.Sphere5 works the same way.
	neg := func(tr *search.Trial) (float64, error) { v, err := searchbench.Sphere5(tr); return -v, err }
	if v := bestOf(t, searchtest.MustTPE(t, search.TPEOptions{Seed: 1}), studydata.Maximize, neg, 100); v < -mr/2 {
		t.Errorf("maximising −searchbench.Sphere5: best %.3f, Random's median %.3f", v, -mr)
	}
}

func TestTPEOptions(t *testing.T) {
	if _, err := search.NewTPESampler(search.TPEOptions{NEICandidates: -1}); err == nil {
		t.Error("NEICandidates −1: no error")
	}
	if _, err := search.NewTPESampler(search.TPEOptions{PriorWeight: math.NaN()}); err == nil {
		t.Error("PriorWeight NaN: no error")
	}
	// No start-up, no prior, endpoints, custom gamma and weights all run.
	s := searchtest.MustTPE(t, search.TPEOptions{NStartupTrials: -1, NoPrior: true, NoMagicClip: true, ConsiderEndpoints: true,
		Gamma: func(n int) int { return n / 2 }, Weights: func(n int) []float64 { return slices.Repeat([]float64{2}, n) }})
	if v := bestOf(t, s, studydata.Minimize, searchtest.MixedObjective(false, false), 40); math.IsNaN(v) {
		t.Error("NaN best")
	}
	bad := searchtest.MustTPE(t, search.TPEOptions{NStartupTrials: 2, Weights: func(n int) []float64 { return make([]float64, n) }})
	st := searchtest.NewStudy(t, search.Config{Sampler: bad})
	st.Optimize(context.Background(), searchbench.Sphere5, 4, 0)
	ts, _ := st.Trials()
	if ts[3].State != studydata.Fail || !strings.Contains(ts[3].Message, "only zeros") {
		t.Errorf("all-zero weights: trial 3 %v %q", ts[3].State, ts[3].Message)
	}
	if w := search.DefaultWeights(30); w[0] != 1.0/30 || w[4] != 1 || w[29] != 1 || len(w) != 30 {
		t.Errorf("DefaultWeights(30) = %v", w)
	}
	if search.DefaultGamma(7) != 1 || search.DefaultGamma(100) != 10 || search.DefaultGamma(1000) != 25 {
		t.Error("DefaultGamma")
	}
}

// TestTPEDynamicSpace: a parameter's past values count only where they fit
// the current distribution; categoricals are matched by value.
func TestTPEDynamicSpace(t *testing.T) {
	s := searchtest.NewStudy(t, search.Config{Sampler: searchtest.MustTPE(t, search.TPEOptions{Seed: 3, NStartupTrials: 3})})
	err := s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		hi := 5.0
		choices := []any{1, 2, 3}
		if tr.Number()%2 == 1 {
			hi = 2
			choices = []any{3, 2, 9}
		}
		x, err := tr.SuggestFloat("x", 0, hi)
		if err != nil {
			return 0, err
		}
		c, err := tr.SuggestCategorical("c", choices)
		if err != nil {
			return 0, err
		}
		if tr.Number()%3 == 0 {
			if _, err := tr.SuggestInt("sometimes", 0, 3); err != nil {
				return 0, err
			}
		}
		return x + float64(c.(int)), nil
	}, 30, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	if n := studydata.CountStates(ts, studydata.Complete); n != 30 {
		t.Fatalf("%d of 30 complete: %s", n, ts[len(ts)-1].Message)
	}
}
