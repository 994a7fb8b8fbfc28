package webui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/runner"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

// artefactsEnv names the directory where TestNotebookWebUI writes its
// screenshot and server log; a relative path is taken from the repository
// root. Without it they go to the test's temporary directory.
const artefactsEnv = "GOMASE_ARTEFACTS"

// artefactsDir returns (and creates) the directory for the test's
// artefacts.
func artefactsDir(t *testing.T, root string) string {
	t.Helper()
	dir := os.Getenv(artefactsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s=%s: %v", artefactsEnv, os.Getenv(artefactsEnv), err)
	}
	return dir
}

// TestNotebookWebUI runs the first lab notebook (quick mode) through the
// classic Jupyter web UI in headless Chromium and checks the page. It
// fails, never skips, when Jupyter, Chromium or the gomase kernelspec is
// missing: CI runs `make setup` first. It skips under -short.
func TestNotebookWebUI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a notebook in jupyter notebook and Chromium (about two minutes); skipped with -short")
	}
	root, err := runner.Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := artefactsDir(t, root)
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		// Stop early enough to report the failing step and clean up
		// before `go test` panics on its own timeout.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-45*time.Second))
		defer cancel()
	}
	const name = "lab0_tutorial1"
	rep, err := Run(ctx, Options{
		Notebook:   filepath.Join(root, "notebooks", name+".ipynb"),
		Root:       root,
		Scale:      scale.Quick,
		Screenshot: filepath.Join(dir, "webui_"+name+".png"),
		ServerLog:  filepath.Join(dir, "webui_"+name+".jupyter.log"),
		Logf:       t.Logf,
		// lab0_tutorial1 prints the model and the graph, draws three
		// graphs with graphviz (inline SVG) and counts the dropouts.
		Checks: Checks{
			MinOutputs: 10,
			MinSVGs:    1,
			Texts:      []string{"BertForSequenceClassification(", "Dropout count is: 6", "unchanged: true"},
			Widgets:    true,
		},
	})
	if rep.Screenshot != "" {
		t.Logf("screenshot (%dx%d): %s", rep.ScreenshotSize.X, rep.ScreenshotSize.Y, rep.Screenshot)
	}
	if rep.ServerLog != "" {
		t.Logf("jupyter notebook log: %s", rep.ServerLog)
	}
	for _, f := range rep.FailedRequests {
		t.Logf("failed loopback request (informational): %s", f)
	}
	for _, e := range rep.Exceptions {
		t.Logf("page exception (informational): %s", e)
	}
	if err != nil {
		var se *StepError
		if !errors.As(err, &se) {
			t.Errorf("Run's error is not a *StepError: %T", err)
		}
		t.Fatal(err)
	}
	t.Logf("%s: %d/%d code cells run in %s (whole run %s), %d outputs, %d inline SVGs",
		name, rep.Executed, rep.CodeCells, rep.RunDuration.Round(time.Millisecond), rep.Duration.Round(time.Millisecond), rep.Outputs, len(rep.SVGs))
	if rep.Screenshot == "" {
		t.Error("no screenshot written")
	}
	if len(rep.RemoteRequests) > 0 {
		t.Errorf("the page requested non-loopback addresses: %v", rep.RemoteRequests)
	}
}

func TestOffLoopback(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8888/api":                  false,
		"ws://127.0.0.1:8888/api/kernels/x/channels": false,
		"http://localhost:1/":                        false,
		"http://[::1]:80/":                           false,
		"data:image/png;base64,AAAA":                 false,
		"blob:http://127.0.0.1:1/uuid":               false,
		"about:blank":                                false,
		"https://cdn.jsdelivr.net/npm/x.js":          true,
		"http://192.0.2.1/":                          true,
		"wss://example.com/socket":                   true,
		"ftp://127.0.0.1/":                           true,
	} {
		if got := offLoopback(u); got != want {
			t.Errorf("offLoopback(%q) = %v, want %v", u, got, want)
		}
	}
}
