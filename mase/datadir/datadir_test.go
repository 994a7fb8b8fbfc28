package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirFindsSharedData(t *testing.T) {
	t.Setenv("GOMASE_DATA_DIR", "")
	d, err := Dir()
	if err != nil {
		t.Fatalf("the shared data beside the checkout must be found (CI has ../shared): %v", err)
	}
	if _, err := os.Stat(filepath.Join(d, "bert-base-uncased", "vocab.txt")); err != nil {
		t.Fatalf("data dir %s lacks the vocabulary: %v", d, err)
	}
	p, err := Find("bert-base-uncased/vocab.txt")
	if err != nil || !strings.HasSuffix(p, "vocab.txt") {
		t.Fatalf("Find: %q %v", p, err)
	}
	if _, err := Find("no/such/file"); err == nil || !strings.Contains(err.Error(), "no/such/file") {
		t.Errorf("missing file: %v", err)
	}
	if r, err := Root(); err != nil || !isRoot(r) {
		t.Errorf("Root: %q %v", r, err)
	}
}

func TestOverridesAndErrors(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("GOMASE_DATA_DIR", tmp)
	if d, err := Dir(); err != nil || d != tmp {
		t.Errorf("GOMASE_DATA_DIR ignored: %q %v", d, err)
	}
	t.Setenv("GOMASE_DATA_DIR", filepath.Join(tmp, "missing"))
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "GOMASE_DATA_DIR") {
		t.Errorf("missing env dir: %v", err)
	}
	SetDir(tmp)
	if d, err := Dir(); err != nil || d != tmp {
		t.Errorf("SetDir ignored: %q %v", d, err)
	}
	SetDir(filepath.Join(tmp, "nope"))
	if _, err := Dir(); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("missing override: %v", err)
	}
	SetDir("")
	// Outside any checkout, with no variables, the error says where it looked.
	t.Setenv("GOMASE_DATA_DIR", "")
	t.Setenv("GOMASE_ROOT", "")
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(tmp); err != nil {
		t.Fatal(err)
	}
	_, err := Dir()
	// The test binary lives outside the checkout, so nothing is found.
	if err == nil || !strings.Contains(err.Error(), "GOMASE_DATA_DIR") {
		t.Errorf("no checkout: %v", err)
	}
	t.Setenv("GOMASE_CACHE_DIR", filepath.Join(tmp, "cache"))
	if c, err := CacheDir(); err != nil || c != filepath.Join(tmp, "cache") {
		t.Errorf("CacheDir: %q %v", c, err)
	}
}
