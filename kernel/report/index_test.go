package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

// writeIndex writes the index and returns its text.
func writeIndex(t *testing.T, dir string, results []Result, info IndexInfo) string {
	t.Helper()
	path, err := WriteIndex(dir, results, info)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteIndex(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.ipynb")
	nb := `{"cells":[{"cell_type":"markdown","metadata":{},"source":["# Lab <1> & friends"]}],"metadata":{},"nbformat":4,"nbformat_minor":5}`
	if err := os.WriteFile(src, []byte(nb), 0o644); err != nil {
		t.Fatal(err)
	}
	report := `<h1 id="lab-1">Lab 1</h1><h2 id="this-run-beside-the-labs-figures">This run</h2><p><strong>The lab's numbers beside this run's</strong></p>`
	if err := os.WriteFile(filepath.Join(dir, "lab1.html"), []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	results := []Result{
		{Notebook: src, Name: "lab1", Report: filepath.Join(dir, "lab1.html"), Duration: 75 * time.Second},
		{Notebook: filepath.Join(dir, "missing.ipynb"), Name: "lab2", Duration: 2 * time.Second, Err: errors.New("cell 3 failed:\npanic")},
	}
	info := IndexInfo{Started: time.Date(2026, 11, 23, 15, 4, 0, 0, time.UTC), Scale: scale.Quick, Machine: "m: cpu, 2 cores", Backend: "go", Commit: "abc123"}
	page := writeIndex(t, dir, results, info)
	for _, want := range []string{
		`<a href="lab1.html">lab1</a>`, `<a href="lab1.html#this-run-beside-the-labs-figures">beside this run's</a>`, "Lab &lt;1&gt; &amp; friends", "1m15s", "2026-11-23 15:04 UTC",
		"m: cpu, 2 cores", "abc123", "quick scale", "FAILED", "cell 3 failed:", "1 failed", "2 notebook(s)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "panic") {
		t.Error("the index shows more than the error's first line")
	}
	if strings.Contains(page, "<script") || CheckOffline(page) != nil {
		t.Error("the index is not self-contained")
	}
}

// TestWriteIndexInProgress: during a run the notebooks still to come are
// listed, the first as running, and the page is replaced whole.
func TestWriteIndexInProgress(t *testing.T) {
	dir := t.TempDir()
	done := []Result{{Notebook: "lab0.ipynb", Name: "lab0", Duration: time.Second}}
	info := IndexInfo{Started: time.Now(), Pending: []string{"notebooks/lab1.ipynb", "notebooks/lab2.ipynb"}}
	page := writeIndex(t, dir, done, info)
	for _, want := range []string{`<td class="pending">running</td>`, `<td class="pending">waiting</td>`, "1 notebook(s); 2 still to run", ">lab2<"} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q:\n%s", want, page)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only index.html", len(entries))
	}
}

func TestDescribeRun(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "")
	info := DescribeRun(t.TempDir(), scale.Standard)
	if info.Backend != "go" || info.Machine == "" || info.Commit != "unknown" || info.Scale != scale.Standard {
		t.Errorf("info %+v", info)
	}
}
