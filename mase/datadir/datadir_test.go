package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// clearEnv removes every variable and override that steers Dir, and makes
// the executable live in an empty temporary directory, so that a test sees
// only what it sets up itself.
func clearEnv(t *testing.T) {
	t.Helper()
	t.Setenv(EnvDataDir, "")
	t.Setenv(EnvRoot, "")
	SetDir("")
	t.Cleanup(func() { SetDir("") })
	exeDir := t.TempDir()
	old := executable
	executable = func() (string, error) { return filepath.Join(exeDir, "mase"), nil }
	t.Cleanup(func() { executable = old })
}

// fakeCheckout makes base/repo (a gomase checkout whose go.mod has the
// given module line) and base/shared/data, and returns both.
func fakeCheckout(t *testing.T, base, moduleLine string) (repo, data string) {
	t.Helper()
	repo = filepath.Join(base, "repo")
	data = filepath.Join(base, "shared", "data")
	for _, d := range []string{repo, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte(moduleLine+"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return repo, data
}

func TestDirFindsSharedDataBesideThisCheckout(t *testing.T) {
	clearEnv(t)
	d, err := Dir()
	if err != nil {
		t.Fatalf("the shared data beside the checkout must be found (CI has ../shared beside the repository): %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "bert-base-uncased", "vocab.txt")); err != nil {
		t.Fatalf("data dir %s lacks the vocabulary: %v", d, err)
	}
	p, err := Find("bert-base-uncased/vocab.txt")
	if err != nil || p != filepath.Join(d, "bert-base-uncased", "vocab.txt") {
		t.Fatalf("Find = %q, %v", p, err)
	}
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Join(filepath.Dir(r), "shared", "data") != d {
		t.Errorf("Root %s is not the checkout beside %s", r, d)
	}
}

func TestWalkUpFromNestedDirectory(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	repo, data := fakeCheckout(t, base, `module "github.com/gomase/gomase" // quoted, with a comment`)
	// A nested module of another name must not stop the walk.
	nested := filepath.Join(repo, "x", "y")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "x", "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(nested)
	if d, err := Dir(); err != nil || d != data {
		t.Errorf("Dir = %q, %v; want %s", d, err, data)
	}
	if r, err := Root(); err != nil || r != repo {
		t.Errorf("Root = %q, %v; want %s", r, err, repo)
	}
}

func TestWalkUpFromExecutable(t *testing.T) {
	clearEnv(t)
	repo, data := fakeCheckout(t, t.TempDir(), "module github.com/gomase/gomase")
	executable = func() (string, error) { return filepath.Join(repo, "bin", "mase"), nil }
	t.Chdir(t.TempDir())
	if d, err := Dir(); err != nil || d != data {
		t.Errorf("Dir = %q, %v; want %s", d, err, data)
	}
}

func TestOtherModuleIsNotACheckout(t *testing.T) {
	clearEnv(t)
	repo, _ := fakeCheckout(t, t.TempDir(), "module github.com/gomase/gomase-fork")
	t.Chdir(repo)
	_, err := Dir()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("a go.mod of another module was taken for the checkout: %v", err)
	}
}

func TestRootVariable(t *testing.T) {
	clearEnv(t)
	repo, data := fakeCheckout(t, t.TempDir(), "module github.com/gomase/gomase")
	t.Chdir(t.TempDir()) // like a GoNB notebook: nowhere near the checkout
	t.Setenv(EnvRoot, repo)
	if d, err := Dir(); err != nil || d != data {
		t.Errorf("Dir = %q, %v; want %s", d, err, data)
	}
	t.Setenv(EnvRoot, filepath.Join(repo, "missing"))
	_, err := Dir()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "GOMASE_ROOT="+filepath.Join(repo, "missing")) {
		t.Errorf("a wrong GOMASE_ROOT is not reported: %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	clearEnv(t)
	envDir, flagDir := t.TempDir(), t.TempDir()
	t.Setenv(EnvDataDir, envDir)
	if d, err := Dir(); err != nil || d != envDir {
		t.Errorf("GOMASE_DATA_DIR ignored: %q, %v", d, err)
	}
	SetDir(flagDir)
	if d, err := Dir(); err != nil || d != flagDir {
		t.Errorf("SetDir does not win over GOMASE_DATA_DIR: %q, %v", d, err)
	}
	SetDir("")
	if d, err := Dir(); err != nil || d != envDir {
		t.Errorf("SetDir(\"\") did not remove the override: %q, %v", d, err)
	}
}

func TestExplicitDirectoryErrors(t *testing.T) {
	clearEnv(t)
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing")
	for _, tc := range []struct {
		set        func()
		wantSource string
		wantWhat   string
	}{
		{func() { t.Setenv(EnvDataDir, missing) }, "$GOMASE_DATA_DIR", "does not exist"},
		{func() { t.Setenv(EnvDataDir, file) }, "$GOMASE_DATA_DIR", "not a directory"},
		{func() { SetDir(missing) }, "--data-dir", "does not exist"},
	} {
		tc.set()
		_, err := Dir()
		if err == nil || !strings.Contains(err.Error(), tc.wantSource) || !strings.Contains(err.Error(), tc.wantWhat) {
			t.Errorf("want an error naming %s and saying %q, got %v", tc.wantSource, tc.wantWhat, err)
		}
		if errors.Is(err, ErrNotFound) {
			t.Errorf("a wrong explicit directory must not read as a failed search: %v", err)
		}
		SetDir("")
		t.Setenv(EnvDataDir, "")
	}
}

func TestNothingFoundListsEveryPlace(t *testing.T) {
	clearEnv(t)
	wd := t.TempDir()
	t.Chdir(wd)
	exe, _ := executable()
	_, err := Dir()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound outside any checkout, got %v", err)
	}
	for _, want := range []string{"$GOMASE_ROOT (not set)", wd, filepath.Dir(exe), "set GOMASE_DATA_DIR", "--data-dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := Find("bert-base-uncased/vocab.txt"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "bert-base-uncased/vocab.txt") {
		t.Errorf("Find outside any checkout: %v", err)
	}
	if _, err := Root(); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "GOMASE_ROOT") {
		t.Errorf("Root outside any checkout: %v", err)
	}
}

func TestFind(t *testing.T) {
	clearEnv(t)
	d := t.TempDir()
	t.Setenv(EnvDataDir, d)
	if err := os.MkdirAll(filepath.Join(d, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "a", "b.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Find("a/b.txt"); err != nil || p != filepath.Join(d, "a", "b.txt") {
		t.Errorf("Find = %q, %v", p, err)
	}
	_, err := Find("a/missing.txt")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), filepath.Join(d, "a", "missing.txt")) {
		t.Errorf("missing file: want ErrNotFound naming the full path, got %v", err)
	}
	for _, bad := range []string{"", "../outside", "/etc/passwd"} {
		if _, err := Find(bad); err == nil || !strings.Contains(err.Error(), "relative path") {
			t.Errorf("Find(%q): want a relative-path error, got %v", bad, err)
		}
	}
}

func TestCacheDir(t *testing.T) {
	want := filepath.Join(t.TempDir(), "c")
	t.Setenv(EnvCacheDir, want)
	if c, err := CacheDir(); err != nil || c != want {
		t.Errorf("CacheDir with GOMASE_CACHE_DIR = %q, %v; want %s", c, err, want)
	}
	if _, err := os.Stat(want); err == nil {
		t.Errorf("CacheDir created %s; it should only name it", want)
	}
	t.Setenv(EnvCacheDir, "")
	if runtime.GOOS == "linux" {
		xdg := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", xdg)
		if c, err := CacheDir(); err != nil || c != filepath.Join(xdg, "gomase") {
			t.Errorf("CacheDir = %q, %v; want %s", c, err, filepath.Join(xdg, "gomase"))
		}
	}
}
