// Package searchtest holds the objectives, samplers and checks that the
// tests of search, its storages and its Optuna files share.
package searchtest

import (
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
)

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.DiscardHandler)

// NewStudy opens a study with cfg (logging to Quiet unless cfg names a
// logger), failing the test on error.
func NewStudy(t testing.TB, cfg search.Config) *search.Study {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Quiet
	}
	s, err := search.NewStudy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// MustTPE is a TPE sampler with opts, failing the test on error.
func MustTPE(t testing.TB, opts search.TPEOptions) *search.TPESampler {
	t.Helper()
	s, err := search.NewTPESampler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// MixedObjective suggests every kind of parameter; it fails when fail is
// set and is pruned when prune is.
func MixedObjective(fail, prune bool) search.Objective {
	return func(t *search.Trial) (float64, error) {
		x, err := t.SuggestFloat("x", -5, 5)
		if err != nil {
			return 0, err
		}
		lr, err := t.SuggestFloat("lr", 1e-5, 1e-1, search.WithLog())
		if err != nil {
			return 0, err
		}
		n, err := t.SuggestInt("n", 1, 64, search.WithLog())
		if err != nil {
			return 0, err
		}
		k, err := t.SuggestInt("k", 0, 20, search.WithStep(4))
		if err != nil {
			return 0, err
		}
		q, err := t.SuggestFloat("q", 0, 1, search.WithStep(0.1))
		if err != nil {
			return 0, err
		}
		c, err := search.Categorical(t, "c", []string{"a", "b", "c"})
		if err != nil {
			return 0, err
		}
		if fail {
			return 0, errors.New("fails on purpose")
		}
		if prune {
			return 0, search.ErrPruned
		}
		v := (x-1)*(x-1) + math.Abs(math.Log10(lr)+3) + math.Abs(float64(n)-8)/8 + float64(k)/20 + q
		if c != "b" {
			v += 1
		}
		return v, nil
	}
}

// Grid is a grid of 12 points over an int, a categorical and a float.
var Grid = map[string][]any{"a": {1, 2, 3}, "b": {"x", "y"}, "lr": {0.1, 0.01}}

// GridObjective suggests Grid's parameters (with wider ranges).
func GridObjective(t *search.Trial) (float64, error) {
	a, err := t.SuggestInt("a", 1, 3)
	if err != nil {
		return 0, err
	}
	b, err := t.SuggestCategorical("b", []any{"x", "y", "z"})
	if err != nil {
		return 0, err
	}
	lr, err := t.SuggestFloat("lr", 1e-3, 1, search.WithLog())
	if err != nil {
		return 0, err
	}
	v := float64(a) * lr
	if b == "y" {
		v++
	}
	return v, nil
}

// WantErr fails the test unless err contains want.
func WantErr(t testing.TB, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want one containing %q", what, err, want)
	}
}
