package initdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// This test binary has no go-graphviz: its init pointed TMPDIR at a folder
// that nothing used; put it back as package graphviz does.
func TestMain(m *testing.M) {
	folder := run
	if err := Restore(); err != nil {
		panic(err)
	}
	if _, err := os.Stat(folder); folder != "" && !os.IsNotExist(err) {
		panic("Restore left " + folder)
	}
	os.Exit(m.Run())
}

func TestPrepareUserCache(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	dir, kept, err := prepare()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if want := filepath.Join(xdg, "gomase", "graphviz", "wazero"); kept != want {
		t.Errorf("cache %q, want %q", kept, want)
	}
	if filepath.Dir(dir) != filepath.Dir(kept) {
		t.Errorf("folder %s not beside the cache", dir)
	}
	if link, err := os.Readlink(filepath.Join(dir, "go-graphviz")); err != nil || link != kept {
		t.Errorf("go-graphviz link: %q %v", link, err)
	}
}

func TestPrepareWithoutUserCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir, kept, err := prepare()
	if err == nil || kept != "" {
		t.Errorf("no home: cache %q, error %v", kept, err)
	}
	if filepath.Dir(dir) != tmp {
		t.Errorf("private folder %q not in TMPDIR %s", dir, tmp)
	}
	os.RemoveAll(dir)
}

func TestPrepareOthersCache(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the folder to uid 65534")
	}
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	cache := filepath.Join(xdg, "gomase", "graphviz", "wazero")
	if err := os.MkdirAll(filepath.Join(cache, "wazero-v0"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(cache, "wazero-v0"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	dir, kept, err := prepare()
	defer os.RemoveAll(dir)
	if err == nil || kept != "" {
		t.Errorf("another user's folder in the cache: cache %q, error %v", kept, err)
	}
}

// TestSweepRemovesOnlyStaleFolders: an init- folder older than staleAfter
// (its process was killed) is removed; a fresh one, which a starting
// process may be using, and other entries are kept.
func TestSweepRemovesOnlyStaleFolders(t *testing.T) {
	parent := t.TempDir()
	stale, fresh, other := filepath.Join(parent, "init-1"), filepath.Join(parent, "init-2"), filepath.Join(parent, "wazero")
	for _, d := range []string{stale, fresh, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleAfter)
	for _, d := range []string{stale, other} {
		if err := os.Chtimes(d, long, long); err != nil {
			t.Fatal(err)
		}
	}
	sweep(parent)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale %s kept: %v", stale, err)
	}
	for _, d := range []string{fresh, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
}
