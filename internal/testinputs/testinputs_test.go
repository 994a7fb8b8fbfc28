package testinputs

import (
	"os"
	"path/filepath"
	"testing"
)

// fatalTB records a Fatal instead of stopping the test.
type fatalTB struct {
	testing.TB
	failed bool
}

func (f *fatalTB) Fatal(args ...any) { f.failed = true }

func TestGoSources(t *testing.T) {
	root := t.TempDir()
	for _, dir := range []string{"a", ".hidden", "_skip"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "x.go"), []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tb := &fatalTB{TB: t}
	GoSources(tb, root)
	if tb.failed {
		t.Error("GoSources failed on a readable tree")
	}
	tb = &fatalTB{TB: t}
	GoSources(tb, filepath.Join(root, "missing"))
	if !tb.failed {
		t.Error("GoSources did not fail on a missing root")
	}
}
