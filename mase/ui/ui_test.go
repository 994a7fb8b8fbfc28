package ui

import (
	"path/filepath"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/models"
)

// TestOutsideNotebook: outside GoNB the display calls show nothing and say
// so, a graph needs a file to go to, and facts pass through their file.
func TestOutsideNotebook(t *testing.T) {
	if Markdown("# x") || HTML("<p>x</p>") || Show(NewTable("t", "a")) {
		t.Error("a display call reported showing something outside a notebook")
	}
	m, err := models.NewMLP(1)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Graph(mg, ""); err == nil {
		t.Error("Graph without a path drew nowhere and returned no error")
	}
	svg := filepath.Join(t.TempDir(), "g.svg")
	if err := Graph(mg, svg); err != nil {
		t.Fatal(err)
	}
	f := Facts{Path: filepath.Join(t.TempDir(), "facts.json")}
	f.Set("accuracy", "0.81")
	if got := f.Get("accuracy"); got != "0.81" {
		t.Errorf("fact read back as %q", got)
	}
}
