package storages_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/studydata"
)

// roundTripObjective suggests parameters of every kind and a categorical
// of mixed types, sets user attributes, and ends its trials Complete,
// Pruned or Failed by number: what a storage must keep across reopening.
func roundTripObjective(tr *search.Trial) (float64, error) {
	if _, err := searchtest.MixedObjective(false, false)(tr); err != nil {
		return 0, err
	}
	c, err := tr.SuggestCategorical("typed", []any{int8(1), uint(2), float32(0.5), 2.5, true, nil, "s"})
	if err != nil {
		return 0, err
	}
	if err := errors.Join(tr.SetUserAttr("note", fmt.Sprint("trial ", tr.Number())),
		tr.SetUserAttr("metrics", map[string]float64{"acc": 0.5})); err != nil {
		return 0, err
	}
	switch tr.Number() % 5 {
	case 3:
		return 0, fmt.Errorf("%w: early", search.ErrPruned)
	case 4:
		return 0, fmt.Errorf("failed with choice %v", c)
	}
	return float64(tr.Number()) / 3, nil
}

// compareReopened fails t where a trial read back from a reopened storage
// differs from the one written.
func compareReopened(t *testing.T, before, after []studydata.FrozenTrial) {
	t.Helper()
	if len(after) != len(before) {
		t.Fatalf("%d trials after reopening, want %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Number != b.Number || a.State != b.State || a.Message != b.Message ||
			!(a.Value == b.Value || math.IsNaN(a.Value) && math.IsNaN(b.Value)) ||
			!reflect.DeepEqual(a.Params, b.Params) || !reflect.DeepEqual(a.UserAttrs, b.UserAttrs) ||
			!reflect.DeepEqual(a.SystemAttrs, b.SystemAttrs) || !a.Started.Equal(b.Started) || !a.Finished.Equal(b.Finished) {
			t.Errorf("trial %d differs after reopening:\n%+v\n%+v", i, b, a)
		}
		for name, d := range b.Distributions {
			if !d.Equal(a.Distributions[name]) {
				t.Errorf("trial %d: distribution of %q %v became %v", i, name, d, a.Distributions[name])
			}
		}
	}
}
