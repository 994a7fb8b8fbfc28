package main

import (
	"flag"
	"math"
	"time"

	"github.com/gomase/gomase/mase/search"
)

// The toy space (--space toy) is a synthetic objective for trying storages,
// workers and the Optuna export without training anything: a smooth
// function of five parameters, one of each kind gomase maps to Optuna
// (float, log float, int, stepped float, categorical), whose maximum 0.5 is
// at x=1, lr=10^-2.5, layers=4, dropout=0.2, act=gelu. Each trial sleeps
// --toy-sleep first, to stand for training.

// toyActBonus is the value each activation adds.
var toyActBonus = map[string]float64{"relu": 0, "gelu": 0.5, "tanh": -0.5}

// toyGrid is the grid of --space toy --sampler grid: 3·2·2·1·2 = 24 points.
var toyGrid = map[string][]any{
	"x": {-2.0, 1.0, 4.0}, "lr": {1e-3, 1e-2}, "layers": {2, 4}, "dropout": {0.2}, "act": {"relu", "gelu"},
}

func addToyFlags(fs *flag.FlagSet) *time.Duration {
	return duration(fs, "toy-sleep", 0, false, "toy: how long each trial sleeps before it returns, to stand for training (e.g. 200ms)")
}

// toyObjective is the objective of --space toy.
func toyObjective(sleep time.Duration) search.Objective {
	return func(t *search.Trial) (float64, error) {
		x, err := t.SuggestFloat("x", -5, 5)
		if err != nil {
			return 0, err
		}
		lr, err := t.SuggestFloat("lr", 1e-4, 1e-1, search.WithLog())
		if err != nil {
			return 0, err
		}
		layers, err := t.SuggestInt("layers", 1, 8)
		if err != nil {
			return 0, err
		}
		dropout, err := t.SuggestFloat("dropout", 0, 0.5, search.WithStep(0.1))
		if err != nil {
			return 0, err
		}
		act, err := search.Categorical(t, "act", []string{"relu", "gelu", "tanh"})
		if err != nil {
			return 0, err
		}
		if sleep > 0 {
			timer := time.NewTimer(sleep)
			select {
			case <-t.Context().Done():
				timer.Stop()
				return 0, t.Context().Err()
			case <-timer.C:
			}
		}
		l := math.Log10(lr) + 2.5
		return -(x-1)*(x-1) - l*l - float64((layers-4)*(layers-4))/4 - 4*(dropout-0.2)*(dropout-0.2) + toyActBonus[act], nil
	}
}
