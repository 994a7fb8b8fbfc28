package nb

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFactsPassFiguresBetweenCells(t *testing.T) {
	f := Facts{Path: filepath.Join(t.TempDir(), "facts.json")}
	if got := f.All(); len(got) != 0 {
		t.Fatalf("facts before any Set: %v", got)
	}
	f.Set("found", "6")
	f.Set("after", "0")
	f.Set("found", "7")
	if f.Get("found") != "7" || f.Get("after") != "0" {
		t.Errorf("facts %v", f.All())
	}
	if err := panicked(t, func() { f.Get("missing") }); err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("Get of a missing fact: %v", err)
	}
}
