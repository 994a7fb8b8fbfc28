package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/trace"
)

// TestExportReplacesOnlyItsOwnFiles: Export writes over a checkpoint it
// wrote, and refuses — before writing anything — a path where another
// program's file (a hub model.safetensors, a JSON file) or a folder is.
func TestExportReplacesOnlyItsOwnFiles(t *testing.T) {
	m, err := models.NewMLP(3)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := trace.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	for range 2 {
		if err := Export(own, mg, Spec{}); err != nil {
			t.Fatalf("exporting over its own checkpoint: %v", err)
		}
	}
	foreign := map[string]string{
		"hub/model.safetensors": "\x10\x00\x00\x00\x00\x00\x00\x00{\"__metadata__\":{}}",
		"config/model.json":     `{"model_type": "bert"}`,
	}
	for name, body := range foreign {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	for base, want := range map[string]string{
		filepath.Join(dir, "hub", "model"):    "model.safetensors exists and is not a parameters file gomase wrote: refusing to overwrite it",
		filepath.Join(dir, "config", "model"): "model.json exists and is not a MaseGraph graph file: refusing to overwrite it",
		filepath.Join(dir, "folder"):          "folder.json is a folder or special file",
		filepath.Join(dir, "missing", "m"):    "no folder",
	} {
		if err := Export(base, mg, Spec{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Export(%s): %v, want an error containing %q", base, err, want)
		}
	}
	for name, body := range foreign {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != body {
			t.Errorf("%s was changed (%v)", name, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*", "model.*")); len(left) != 2 {
		t.Errorf("files beside the foreign ones: %v", left)
	}
}
