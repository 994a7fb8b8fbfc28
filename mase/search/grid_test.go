package search_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/studydata"
)

func gridOrder(t *testing.T, s *search.Study) []string {
	t.Helper()
	ts, err := s.Trials()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, tr := range ts {
		if tr.State != studydata.Complete {
			t.Fatalf("trial %d: %v %s", tr.Number, tr.State, tr.Message)
		}
		keys = append(keys, fmt.Sprint(tr.Params["a"], tr.Params["b"], tr.Params["lr"]))
	}
	return keys
}

func TestGridVisitsEachPointOnce(t *testing.T) {
	g, err := search.NewGridSampler(searchtest.Grid, 7)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 12 {
		t.Fatalf("Len = %d, want 12", g.Len())
	}
	s := searchtest.NewStudy(t, search.Config{Sampler: g})
	if err := s.Optimize(context.Background(), searchtest.GridObjective, 100, 0); err != nil {
		t.Fatal(err)
	}
	order := gridOrder(t, s)
	if len(order) != 12 {
		t.Fatalf("%d trials, want the 12 grid points then a stop", len(order))
	}
	seen := map[string]bool{}
	for _, k := range order {
		if seen[k] {
			t.Fatalf("point %s visited twice in %v", k, order)
		}
		seen[k] = true
	}
	// Exhausted: Optimize runs nothing more, Ask says so.
	if err := s.Optimize(context.Background(), searchtest.GridObjective, 5, 0); err != nil {
		t.Fatal(err)
	}
	if ts, _ := s.Trials(); len(ts) != 12 {
		t.Fatalf("Optimize on an exhausted grid ran %d more trials", len(ts)-12)
	}
	if _, err := s.Ask(context.Background()); !errors.Is(err, search.ErrStudyStopped) {
		t.Fatalf("Ask on an exhausted grid: %v", err)
	}
	// nTrials 0 is fine with a grid: it stops when exhausted.
	g2, _ := search.NewGridSampler(searchtest.Grid, 7)
	s2 := searchtest.NewStudy(t, search.Config{Sampler: g2})
	if err := s2.Optimize(context.Background(), searchtest.GridObjective, 0, 0); err != nil {
		t.Fatal(err)
	}
	// Same seed, same order; another seed, another order.
	if o2 := gridOrder(t, s2); !reflect.DeepEqual(o2, order) {
		t.Errorf("same seed, different order:\n%v\n%v", order, o2)
	}
	g3, _ := search.NewGridSampler(searchtest.Grid, 8)
	s3 := searchtest.NewStudy(t, search.Config{Sampler: g3})
	s3.Optimize(context.Background(), searchtest.GridObjective, 0, 0)
	if o3 := gridOrder(t, s3); reflect.DeepEqual(o3, order) {
		t.Errorf("seeds 7 and 8 give the same order %v", order)
	}
	if p := g.Point(0); !reflect.DeepEqual(p, map[string]any{"a": 1, "b": "x", "lr": 0.1}) {
		t.Errorf("Point(0) = %v", p)
	}
	if p := g.Point(11); !reflect.DeepEqual(p, map[string]any{"a": 3, "b": "y", "lr": 0.01}) {
		t.Errorf("Point(11) = %v", p)
	}
}

func TestGridErrors(t *testing.T) {
	if _, err := search.NewGridSampler(map[string][]any{"a": {}}, 0); err == nil || !strings.Contains(err.Error(), `"a" has no values`) {
		t.Errorf("empty values: %v", err)
	}
	if _, err := search.NewGridSampler(map[string][]any{"a": {[]int{1}}}, 0); err == nil {
		t.Error("a slice as grid value: no error")
	}
	g, _ := search.NewGridSampler(map[string][]any{"a": {1, 2}, "b": {"p", "q"}}, 0)
	s := searchtest.NewStudy(t, search.Config{Sampler: g})
	err := s.Optimize(context.Background(), func(tr *search.Trial) (float64, error) {
		if _, err := tr.SuggestInt("a", 0, 5); err != nil {
			return 0, err
		}
		switch tr.Number() {
		case 0:
			_, err := tr.SuggestFloat("undeclared", 0, 1)
			return 0, err
		case 1:
			_, err := tr.SuggestCategorical("b", []any{"r", "s"})
			return 0, err
		}
		return 1, nil
	}, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := s.Trials()
	if ts[0].State != studydata.Fail || !strings.Contains(ts[0].Message, `parameter "undeclared" is not in the grid (grid parameters: a, b)`) {
		t.Errorf("undeclared parameter: %v %q", ts[0].State, ts[0].Message)
	}
	if ts[1].State != studydata.Fail || !strings.Contains(ts[1].Message, "not one of the choices") {
		t.Errorf("grid value not among the choices: %v %q", ts[1].State, ts[1].Message)
	}
}

// TestGridHuge: a grid of 2^60 points (60 binary choices) is accepted, and
// its trials take distinct points without listing them; the same seed gives
// the same points.
func TestGridHuge(t *testing.T) {
	grid := map[string][]any{}
	for i := range 60 {
		grid[fmt.Sprintf("x%02d", i)] = []any{"a", "b"}
	}
	objective := func(tr *search.Trial) (float64, error) {
		v := 0.0
		for i := range 60 {
			c, err := tr.SuggestCategorical(fmt.Sprintf("x%02d", i), []any{"a", "b"})
			if err != nil {
				return 0, err
			}
			if c == "b" {
				v++
			}
		}
		return v, nil
	}
	run := func() []string {
		g, err := search.NewGridSampler(grid, 3)
		if err != nil {
			t.Fatal(err)
		}
		if g.Len() != 1<<60 {
			t.Fatalf("Len = %d, want 2^60", g.Len())
		}
		s := searchtest.NewStudy(t, search.Config{Sampler: g})
		if err := s.Optimize(context.Background(), objective, 20, 0); err != nil {
			t.Fatal(err)
		}
		ts, _ := s.Trials()
		var ids []string
		seen := map[string]bool{}
		for _, tr := range ts {
			if tr.State != studydata.Complete {
				t.Fatalf("trial %d: %v %s", tr.Number, tr.State, tr.Message)
			}
			id := tr.SystemAttrs[search.GridIDAttr]
			if seen[id] {
				t.Fatalf("grid point %s visited twice", id)
			}
			seen[id] = true
			ids = append(ids, id)
		}
		if len(ids) != 20 {
			t.Fatalf("%d trials, want 20", len(ids))
		}
		return ids
	}
	if a, b := run(), run(); !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different points:\n%v\n%v", a, b)
	}
	// Over math.MaxInt points: refused.
	grid["y"] = []any{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if _, err := search.NewGridSampler(grid, 0); err == nil || !strings.Contains(err.Error(), "math.MaxInt") {
		t.Errorf("a grid of 9·2^60 points: %v", err)
	}
}
