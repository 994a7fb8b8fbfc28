package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
