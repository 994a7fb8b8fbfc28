package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

func TestFindRoot(t *testing.T) {
	t.Setenv(RootEnv, "")
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "kernel", "runner", "runner.go")); !isRoot(root) || err != nil {
		t.Fatalf("FindRoot(.) = %s, not the gomase repository", root)
	}
	// The nested tools module is passed over.
	if got, err := FindRoot(filepath.Join(root, "kernel", "tools")); err != nil || got != root {
		t.Errorf("FindRoot(kernel/tools) = %q, %v; want %q", got, err, root)
	}
	// Outside the repository: GOMASE_ROOT, validated.
	outside := t.TempDir()
	if _, err := FindRoot(outside); err == nil || !strings.Contains(err.Error(), RootEnv+" is not set") {
		t.Errorf("FindRoot(outside) = %v, want an error naming %s", err, RootEnv)
	}
	t.Setenv(RootEnv, root)
	if got, err := FindRoot(outside); err != nil || got != root {
		t.Errorf("FindRoot(outside) with %s = %q, %v; want %q", RootEnv, got, err, root)
	}
	t.Setenv(RootEnv, outside)
	if _, err := FindRoot(outside); err == nil || !strings.Contains(err.Error(), "does not hold a go.mod") {
		t.Errorf("FindRoot with a wrong %s = %v, want an error", RootEnv, err)
	}
}

func TestNotebooks(t *testing.T) {
	root := t.TempDir()
	if _, err := Notebooks(root); err == nil || !strings.Contains(err.Error(), "no notebooks in") {
		t.Errorf("Notebooks(empty) = %v, want an error", err)
	}
	os.MkdirAll(filepath.Join(root, "notebooks"), 0o755)
	for _, n := range []string{"lab1.ipynb", "lab0.ipynb", "notes.md"} {
		os.WriteFile(filepath.Join(root, "notebooks", n), []byte("{}"), 0o644)
	}
	got, err := Notebooks(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "notebooks", "lab0.ipynb"), filepath.Join(root, "notebooks", "lab1.ipynb")}
	if !slices.Equal(got, want) {
		t.Errorf("Notebooks = %q, want %q", got, want)
	}
}

func TestNotebookEnv(t *testing.T) {
	t.Setenv(scale.BackendEnv, "")
	env := NotebookEnv([]string{"PATH=/bin", scale.QuickEnv + "=1", scale.Env + "=full", RootEnv + "=/old"}, Options{Root: "/repo"})
	want := []string{"PATH=/bin", scale.Env + "=standard", RootEnv + "=/repo", "PYDEVD_DISABLE_FILE_VALIDATION=1"}
	if !slices.Equal(env, want) {
		t.Errorf("env with no scale = %q, want %q", env, want)
	}
	env = NotebookEnv([]string{"PATH=/bin"}, Options{Root: "/repo", Scale: scale.Quick})
	if !slices.Contains(env, scale.Env+"=quick") {
		t.Errorf("env at quick scale = %q", env)
	}
}

func TestRunNotebookRejectsBadInput(t *testing.T) {
	opts := Options{Root: "/nonexistent", OutDir: t.TempDir()}
	if r := RunNotebook(t.Context(), "notes.md", opts); r.Err == nil || !strings.Contains(r.Err.Error(), "expected a .ipynb file") {
		t.Errorf("RunNotebook(notes.md) = %v", r.Err)
	}
	bad := filepath.Join(t.TempDir(), "bad.ipynb")
	os.WriteFile(bad, []byte(`{"nbformat": 3}`), 0o644)
	if r := RunNotebook(t.Context(), bad, opts); r.Err == nil || !strings.Contains(r.Err.Error(), "nbformat 4") {
		t.Errorf("RunNotebook(nbformat 3) = %v", r.Err)
	}
	// The output directory must not be the notebook's own directory.
	src := filepath.Join("testdata", "e2e_panic.ipynb")
	if r := RunNotebook(t.Context(), src, Options{Root: "/nonexistent", OutDir: "testdata"}); r.Err == nil || !strings.Contains(r.Err.Error(), "would overwrite the notebook") {
		t.Errorf("RunNotebook with --out = its directory: %v", r.Err)
	}
}

func TestSetEnv(t *testing.T) {
	got := SetEnv([]string{"A=1", "PYTHONWARNINGS=x", "B=2", "PYTHONWARNINGS=y"}, "PYTHONWARNINGS", "x,z")
	if strings.Join(got, " ") != "A=1 B=2 PYTHONWARNINGS=x,z" {
		t.Errorf("SetEnv gave %q", got)
	}
}

// TestSaveExecutedIsAtomic: the executed notebook reaches --out whole or
// not at all: a write that fails half-way (a full disk) leaves the earlier
// notebook and no temporary file; a driver that wrote nothing leaves no
// stale notebook beside the new report.
func TestSaveExecutedIsAtomic(t *testing.T) {
	work, out := t.TempDir(), t.TempDir()
	draft, dst := filepath.Join(work, "executed.ipynb"), filepath.Join(out, "lab.ipynb")
	earlier := `{"cells": [], "metadata": {"gomase": {"executed_by": "mase labs"}}, "nbformat": 4, "nbformat_minor": 5}`
	newer := `{"cells": [{"cell_type": "markdown", "metadata": {}, "source": "new"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
	for _, f := range []struct{ path, body string }{{dst, earlier}, {draft, newer}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	atomicfile.FailHook = func(step, path string) error {
		if step == "write" {
			return syscall.ENOSPC
		}
		return nil
	}
	nb, err := saveExecuted(draft, dst)
	atomicfile.FailHook = nil
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || nb == nil {
		t.Errorf("saveExecuted on a full disk = %v, %v; want the notebook and the write's error", nb, err)
	}
	if b, _ := os.ReadFile(dst); string(b) != earlier {
		t.Errorf("after the failed write %s holds %q, want the earlier notebook", dst, b)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("the failed write left %v in --out", entries)
	}
	if nb, err := saveExecuted(draft, dst); err != nil || nb == nil || len(nb.Cells) != 1 {
		t.Fatalf("saveExecuted = %v, %v", nb, err)
	}
	if b, _ := os.ReadFile(dst); string(b) != newer {
		t.Errorf("%s holds %q, want the new notebook", dst, b)
	}
	os.Remove(draft)
	if nb, err := saveExecuted(draft, dst); nb != nil || err != nil {
		t.Errorf("saveExecuted of no draft = %v, %v", nb, err)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("the earlier executed notebook is left beside a report of a run that wrote none")
	}
}

// TestRunEnv: a run's processes get TMPDIR and RunEnv naming its work
// folder; without a home folder the checkpoints stay in the TMPDIR of
// before, which outlives the run.
func TestRunEnv(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(labsDirEnv, "")
	t.Setenv("HOME", "")
	env := runEnv([]string{"PATH=/bin", "TMPDIR=" + tmp}, "/work/run-1")
	want := []string{"PATH=/bin", labsDirEnv + "=" + filepath.Join(tmp, "gomase-labs"), RunEnv + "=/work/run-1", "TMPDIR=/work/run-1"}
	if !slices.Equal(env, want) {
		t.Errorf("runEnv without a home = %q, want %q", env, want)
	}
	t.Setenv("HOME", t.TempDir())
	if env := runEnv([]string{"PATH=/bin"}, "/work/run-1"); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, labsDirEnv+"=") }) {
		t.Errorf("runEnv with a home sets %s: %q", labsDirEnv, env)
	}
}
