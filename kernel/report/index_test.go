package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/kernel/notebook"
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

// writeLabReport writes a report for notebook name into dir as a run would.
func writeLabReport(dir, name string, failure error) (Result, error) {
	nb, err := notebook.ParseNotebook([]byte(`{"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Lab ` + name + `"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`))
	if err != nil {
		return Result{}, err
	}
	path := filepath.Join(dir, name+".html")
	info := Info{Name: name + ".ipynb", Err: failure, Duration: 90 * time.Second, Scale: scale.Quick, Backend: "go", Generated: time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)}
	if err := Write(path, nb, info); err != nil {
		return Result{}, err
	}
	return Result{Notebook: filepath.Join(dir, "missing", name+".ipynb"), Name: name, Report: path, Duration: info.Duration, Err: failure}, nil
}

// labReport is writeLabReport, failing the test on an error.
func labReport(t *testing.T, dir, name string, failure error) Result {
	t.Helper()
	r, err := writeLabReport(dir, name, failure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWriteIndexListsEveryReport: the index lists this run's results and
// every other report mase labs wrote in the folder (another run's, read
// from the report), never a page of the user's or the index itself.
func TestWriteIndexListsEveryReport(t *testing.T) {
	dir := t.TempDir()
	labReport(t, dir, "lab1", nil)
	labReport(t, dir, "lab2", errors.New("cell 4 (id x) `train()` failed: out of memory\nstack"))
	if err := os.WriteFile(filepath.Join(dir, "notes.html"), []byte("<html>my notes</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := labReport(t, dir, "lab3", nil)
	page := writeIndex(t, dir, []Result{mine}, IndexInfo{Started: time.Now(), Scale: scale.Quick})
	for _, want := range []string{
		`<a href="lab3.html">lab3</a>`, `<a href="lab1.html">lab1</a>`, `<a href="lab2.html">lab2</a>`,
		"Lab lab1", "from another run (2026-11-20 09:30 UTC, quick scale)", "out of memory", "1m30s", "3 notebook(s), 1 failed",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "notes") || strings.Contains(page, `href="index.html"`) || strings.Contains(page, "stack") {
		t.Errorf("index lists a page mase labs did not write, itself, or more than an error's first line:\n%s", page)
	}
	// This run's rows come first, the others by name.
	if i3, i1, i2 := strings.Index(page, ">lab3<"), strings.Index(page, ">lab1<"), strings.Index(page, ">lab2<"); !(i3 < i1 && i1 < i2) {
		t.Errorf("rows out of order (lab3 at %d, lab1 at %d, lab2 at %d)", i3, i1, i2)
	}
}

// TestWriteIndexConcurrentRuns: runs writing into one folder at once (each
// its report, then the index) leave an index that links every report.
func TestWriteIndexConcurrentRuns(t *testing.T) {
	dir := t.TempDir()
	const runs = 8
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := writeLabReport(dir, fmt.Sprintf("lab%d", i), nil)
			if err == nil {
				_, err = WriteIndex(dir, []Result{r}, IndexInfo{Started: time.Now()})
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if link := fmt.Sprintf(`<a href="lab%d.html">`, i); !strings.Contains(string(page), link) {
			t.Errorf("the index lacks %s:\n%s", link, page)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != runs+1 {
		t.Errorf("%d files in the folder, want %d reports and index.html", len(entries), runs)
	}
}

// TestWritesAreAtomic: a report or index write that fails half-way (a full
// disk) leaves the earlier page and no temporary file.
func TestWritesAreAtomic(t *testing.T) {
	dir := t.TempDir()
	earlier := labReport(t, dir, "lab1", nil)
	if _, err := WriteIndex(dir, []Result{earlier}, IndexInfo{Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, name := range []string{"lab1.html", "index.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		before[name] = string(b)
	}
	atomicfile.FailHook = func(step, path string) error {
		if step == "write" {
			return syscall.ENOSPC
		}
		return nil
	}
	defer func() { atomicfile.FailHook = nil }()
	nb, _ := notebook.ParseNotebook([]byte(`{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`))
	if err := Write(filepath.Join(dir, "lab1.html"), nb, Info{Name: "lab1.ipynb", Err: errors.New("changed")}); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Write on a full disk: %v", err)
	}
	if _, err := WriteIndex(dir, nil, IndexInfo{Started: time.Now()}); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("WriteIndex on a full disk: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the failed writes left %v", entries)
	}
	for name, want := range before {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s changed after a failed write", name)
		}
	}
}
