package storages_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gomase/gomase/mase/search"
	"github.com/gomase/gomase/mase/search/internal/searchtest"
	"github.com/gomase/gomase/mase/search/storages"
	"github.com/gomase/gomase/mase/search/studydata"
)

// TestGridResume: a study resumed from a journal visits only the points left,
// and retries the point of a trial whose process crashed.
func TestGridResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "grid.jsonl")
	open := func(seed int64) *search.Study {
		j, err := storages.OpenJournal(path, searchtest.Quiet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		g, _ := search.NewGridSampler(searchtest.Grid, seed)
		return searchtest.NewStudy(t, search.Config{Name: "grid", Sampler: g, Storage: j})
	}
	s := open(1)
	if err := s.Optimize(context.Background(), searchtest.GridObjective, 5, 0); err != nil {
		t.Fatal(err)
	}
	// A trial left running by a dead process holds point 3 (if not visited).
	ts, _ := s.Trials()
	visited := map[string]bool{}
	for _, tr := range ts {
		visited[tr.SystemAttrs[search.GridIDAttr]] = true
	}
	crashed := ""
	for id := range 12 {
		if !visited[fmt.Sprint(id)] {
			crashed = fmt.Sprint(id)
			break
		}
	}
	appendRecords(t, path,
		fmt.Sprintf(`{"op":"create_trial","study":"grid","trial":5,"owner":%s}`, deadOwnerJSON()),
		fmt.Sprintf(`{"op":"set_system_attr","study":"grid","trial":5,"name":"grid","value":%q}`, ts[0].SystemAttrs["grid"]),
		fmt.Sprintf(`{"op":"set_system_attr","study":"grid","trial":5,"name":"grid_id","value":%q}`, crashed))
	s2 := open(2)
	if err := s2.Optimize(context.Background(), searchtest.GridObjective, 100, 0); err != nil {
		t.Fatal(err)
	}
	ts, _ = s2.Trials()
	count := map[string]int{}
	for _, tr := range ts {
		if tr.State == studydata.Complete {
			count[fmt.Sprint(tr.Params["a"], tr.Params["b"], tr.Params["lr"])]++
		}
	}
	if len(ts) != 13 || len(count) != 12 || ts[5].State != studydata.Fail {
		t.Fatalf("after resume: %d trials (want 13: 12 points + the crashed one), %d distinct complete points, trial 5 %v", len(ts), len(count), ts[5].State)
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("point %s completed %d times", k, n)
		}
	}
}
