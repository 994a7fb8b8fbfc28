package initdir

import (
	"os"
	"path/filepath"
	"syscall"
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

// TestDamagedCacheIsRebuilt: a cache that matches its manifest is kept; one
// with a file cut short, a FIFO in it, or files and no manifest is emptied
// by prepare before go-graphviz could read it (its init would panic).
func TestDamagedCacheIsRebuilt(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, cache, file string)
		kept   bool
	}{
		{"intact", func(*testing.T, string, string) {}, true},
		{"a file cut short", func(t *testing.T, _, file string) {
			if err := os.Truncate(file, 10); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a FIFO", func(t *testing.T, cache, _ string) {
			if err := syscall.Mkfifo(filepath.Join(cache, "wazero-v0", "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"no manifest", func(t *testing.T, cache, _ string) {
			if err := os.Remove(manifestPath(cache)); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			xdg := t.TempDir()
			t.Setenv("XDG_CACHE_HOME", xdg)
			cache := filepath.Join(xdg, "gomase", "graphviz", "wazero")
			file := filepath.Join(cache, "wazero-v0", "compiled")
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte("compiled code, 32 bytes of it..."), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := writeManifest(cache); err != nil {
				t.Fatal(err)
			}
			c.damage(t, cache, file)
			dir, kept, err := prepare()
			defer os.RemoveAll(dir)
			if err != nil || kept != cache {
				t.Fatalf("prepare: cache %q, %v", kept, err)
			}
			_, statErr := os.Stat(file)
			if got := statErr == nil; got != c.kept {
				t.Errorf("compiled file kept: %v, want %v", got, c.kept)
			}
			if matched, err := checkCache(cache); err != nil || matched != c.kept {
				t.Errorf("after prepare: matched %v, %v", matched, err)
			}
		})
	}
}
