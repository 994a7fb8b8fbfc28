package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDirSweepsWhatDeadProcessesLeft: a new work folder removes the ones
// of processes no longer alive with the same prefix, and keeps those of
// live processes, other prefixes, files and its own.
func TestDirSweepsWhatDeadProcessesLeft(t *testing.T) {
	parent := t.TempDir()
	dead := filepath.Join(parent, "gomase-compress-2147483646-abc")
	live := filepath.Join(parent, fmt.Sprintf("gomase-compress-%d-def", os.Getppid()))
	other := filepath.Join(parent, "gomase-search-2147483646-abc")
	file := filepath.Join(parent, "gomase-compress-2147483646-file")
	odd := filepath.Join(parent, "gomase-compress-notapid-x")
	for _, d := range []string{dead, live, other, odd} {
		if err := os.MkdirAll(filepath.Join(d, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := Dir(parent, "gomase-compress-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead process's folder is still there (%v)", err)
	}
	for _, p := range []string{live, other, file, odd, dir} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if again := Sweep(parent, "gomase-compress-"); !slices.Equal(again, nil) {
		t.Errorf("a second sweep removed %v", again)
	}
}
