package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/kernel/report"
)

// TestCheckOutputs: a run may replace what mase labs wrote, never a file it
// did not write, and refuses a notebook whose report the index would replace.
func TestCheckOutputs(t *testing.T) {
	write := func(t *testing.T, p, body string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ours := "<!DOCTYPE html><html><head>" + report.Generator + "</head><body></body></html>"
	nbs := []string{"notebooks/lab1.ipynb"}
	for _, c := range []struct {
		name  string
		files map[string]string
		nbs   []string
		want  string // "" for no error
	}{
		{"an empty folder", nil, nbs, ""},
		{"an earlier run's outputs", map[string]string{"lab1.ipynb": `{"cells": []}`, "lab1.html": ours, "index.html": ours}, nbs, ""},
		{"an executed notebook marked as ours", map[string]string{"lab1.ipynb": `{"cells": [], "metadata": {"gomase": {"executed_by": "mase labs"}}}`}, nbs, ""},
		{"an index of before the marker", map[string]string{"index.html": "<html><head><title>gomase lab reports</title></head></html>"}, nbs, ""},
		{"the user's notebook of the same name", map[string]string{"lab1.ipynb": `{"cells": [{"source": "mine"}]}`}, nbs, "already holds lab1.ipynb, which mase labs did not write"},
		{"the user's page of the same name", map[string]string{"lab1.html": "<html>my notes</html>"}, nbs, "already holds lab1.html"},
		{"the user's index.html", map[string]string{"index.html": "<html>my site</html>"}, nbs, "already holds index.html"},
		{"a notebook named index", nil, []string{"work/index.ipynb"}, "which the run's index page replaces"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range c.files {
				write(t, filepath.Join(dir, name), body)
			}
			err := checkOutputs(c.nbs, dir)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("checkOutputs = %v, want %q", err, c.want)
			}
		})
	}
	file := filepath.Join(t.TempDir(), "reports")
	write(t, file, "not a folder")
	if err := checkOutputs(nbs, file); err == nil || !strings.Contains(err.Error(), "is a file, not a folder") {
		t.Errorf("--out a file: %v", err)
	}
}
