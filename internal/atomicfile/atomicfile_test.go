package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// noTemporaries fails the test when a temporary file is left in dir.
func noTemporaries(t *testing.T, dir, when string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(left) != 0 {
		t.Errorf("%s: temporary files left: %v", when, left)
	}
}

// contents reads every file of paths, "" for a missing one.
func contents(paths ...string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		b, _ := os.ReadFile(p)
		out[i] = string(b)
	}
	return out
}

func TestWriteReplacesAllFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.json")
	if err := os.WriteFile(a, []byte("old a"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(File{Path: a, Data: []byte("new a")}, File{Path: b, Data: []byte("new b")}); err != nil {
		t.Fatal(err)
	}
	if got := contents(a, b); !slices.Equal(got, []string{"new a", "new b"}) {
		t.Errorf("contents %q", got)
	}
	for _, p := range []string{a, b} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, %v; want 0644", p, fi.Mode(), err)
		}
	}
	noTemporaries(t, dir, "success")
}

func TestWriteFailureLeavesOldFiles(t *testing.T) {
	t.Cleanup(func() { FailHook = nil })
	for _, step := range []string{"write", "sync", "rename"} {
		for _, failing := range []string{"a.bin", "b.json"} {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a.bin"), filepath.Join(dir, "b.json")
			if err := Write(File{Path: a, Data: []byte("old a")}, File{Path: b, Data: []byte("old b")}); err != nil {
				t.Fatal(err)
			}
			FailHook = func(s, path string) error {
				if s == step && filepath.Base(path) == failing {
					return errors.New("simulated failure")
				}
				return nil
			}
			err := Write(File{Path: a, Data: []byte("new a")}, File{Path: b, Data: []byte("new b")})
			FailHook = nil
			if err == nil || !strings.Contains(err.Error(), "simulated failure") || !strings.Contains(err.Error(), failing) {
				t.Errorf("%s of %s: err = %v", step, failing, err)
			}
			// Only a failed rename of the second file comes after a rename.
			want := []string{"old a", "old b"}
			if step == "rename" && failing == "b.json" {
				want[0] = "new a"
			}
			if got := contents(a, b); !slices.Equal(got, want) {
				t.Errorf("%s of %s: contents %q, want %q", step, failing, got, want)
			}
			noTemporaries(t, dir, step+" of "+failing)
		}
	}
}

func TestWriteRefusesBadPaths(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]string{
		dir:                                   "is a directory",
		filepath.Join(dir, "no", "such", "f"): "does not exist",
	} {
		if err := Write(File{Path: path, Data: []byte("x")}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", path, err, want)
		}
	}
}

// TestWriteSweepsKilledWrites: the temporary files a killed write left
// beside a path go at the next write to that path: at once when the
// process that wrote them is gone, else once they are stale; a fresh one
// of a live process (a write under way) and other files stay.
func TestWriteSweepsKilledWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model[1].json")
	stale, fresh, other := filepath.Join(dir, ".model[1].json.tmp-111"), filepath.Join(dir, ".model[1].json.tmp-222"), filepath.Join(dir, ".other.json.tmp-333")
	killed := filepath.Join(dir, ".model[1].json.tmp-2147483646-123")
	live := filepath.Join(dir, fmt.Sprintf(".model[1].json.tmp-%d-456", os.Getppid()))
	for _, p := range []string{stale, fresh, other, killed, live} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleAfter)
	for _, p := range []string{stale, other} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(File{Path: path, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, killed} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the killed write's %s is still there: %v", p, err)
		}
	}
	for _, p := range []string{fresh, other, live, path} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestCanWrite: a folder that takes files passes and is left empty; a
// missing one gives the system's reason.
func TestCanWrite(t *testing.T) {
	dir := t.TempDir()
	if err := CanWrite(dir); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
	if err := CanWrite(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing folder: %v, want the bare reason (no such file or directory)", err)
	}
}
