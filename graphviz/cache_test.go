package graphviz

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// childEnv makes TestCacheChild act: it is this test binary run again by
// TestCacheFolders, with a TMPDIR and a cache folder of the parent's.
const childEnv = "GOMASE_GRAPHVIZ_CACHE_CHILD"

// TestCacheChild renders once and prints what the parent checks; it does
// nothing in a normal run.
func TestCacheChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestCacheFolders")
	}
	svg, err := RenderSVG("digraph { a -> b }")
	if err != nil || !strings.Contains(string(svg), "<svg") {
		t.Fatalf("render: %v %.200s", err, svg)
	}
	t.Logf("TMPDIR=%s", os.Getenv("TMPDIR"))
	t.Logf("CACHE=%s", CacheDir())
}

// TestCacheFolders: go-graphviz's start-up, which runs in this package's
// initialisation, keeps its compiled code in the user's cache folder and
// leaves nothing in TMPDIR, which it gets back unchanged.
func TestCacheFolders(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("the child")
	}
	tmp, xdg, other := t.TempDir(), t.TempDir(), t.TempDir()
	cases := []struct {
		name string
		env  []string
		kept string // where the compiled code must be, "" for nowhere
	}{
		{"user cache", []string{"XDG_CACHE_HOME=" + xdg}, filepath.Join(xdg, "gomase", "graphviz", "wazero")},
		{"user cache again, after a file of it was cut short", []string{"XDG_CACHE_HOME=" + xdg}, filepath.Join(xdg, "gomase", "graphviz", "wazero")},
		{"no home", nil, ""},
	}
	if os.Geteuid() == 0 {
		// A cache folder of another user's (sudo keeping HOME) is not used.
		dir := filepath.Join(other, "gomase", "graphviz", "wazero")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			env  []string
			kept string
		}{"another user's cache", []string{"XDG_CACHE_HOME=" + other}, ""})
	}
	for _, tc := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheChild$", "-test.v", "-test.count=1")
		cmd.Env = append(withoutVars(os.Environ(), "TMPDIR", "XDG_CACHE_HOME", "HOME"), append(tc.env, childEnv+"=1", "TMPDIR="+tmp)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if !strings.Contains(string(out), "TMPDIR="+tmp+"\n") {
			t.Errorf("%s: TMPDIR not given back:\n%s", tc.name, out)
		}
		if !strings.Contains(string(out), "CACHE="+tc.kept+"\n") {
			t.Errorf("%s: cache folder not %q:\n%s", tc.name, tc.kept, out)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%s: left in TMPDIR: %v", tc.name, names(left))
		}
		if tc.kept != "" {
			if files, _ := filepath.Glob(filepath.Join(tc.kept, "wazero-*", "*")); len(files) == 0 {
				t.Errorf("%s: no compiled code in %s", tc.name, tc.kept)
			}
			// The folder for TMPDIR during start-up (init-*) is gone too;
			// the cache's lock and manifest are beside it.
			if got := strings.Join(names(mustReadDir(t, filepath.Dir(tc.kept))), " "); got != "wazero wazero.lock wazero.manifest.json" {
				t.Errorf("%s: %s holds %s, want only wazero, its lock and its manifest", tc.name, filepath.Dir(tc.kept), got)
			}
			// A cache file cut short (a disk filled, a copy stopped) would
			// make go-graphviz's init panic: the next start-up rebuilds it.
			if tc.name == "user cache" {
				files, _ := filepath.Glob(filepath.Join(tc.kept, "wazero-*", "*"))
				if len(files) > 0 {
					if err := os.Truncate(files[0], 1000); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(other, "gomase", "graphviz", "wazero", "*")); len(left) > 0 {
		t.Errorf("another user's cache folder written to: %v", left)
	}
}

func withoutVars(env []string, names ...string) []string {
	var kept []string
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		kept = append(kept, kv)
	}
	return kept
}

func names(entries []os.DirEntry) []string {
	var s []string
	for _, e := range entries {
		s = append(s, e.Name())
	}
	return s
}

func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// TestConcurrentStartUps: programs starting together on a cache that must
// be rebuilt (its manifest lost, as after an upgrade) all start and draw:
// they take the cache's start-up lock in turn, so none empties the cache
// while another compiles into it.
func TestConcurrentStartUps(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("the child")
	}
	xdg := t.TempDir()
	run := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheChild$", "-test.count=1")
		cmd.Env = append(withoutVars(os.Environ(), "XDG_CACHE_HOME"), "XDG_CACHE_HOME="+xdg, childEnv+"=1")
		return cmd
	}
	if out, err := run().CombinedOutput(); err != nil {
		t.Fatalf("first start-up: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(xdg, "gomase", "graphviz", "wazero.manifest.json")); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make(chan error, n)
	for range n {
		go func() {
			out, err := run().CombinedOutput()
			if err != nil {
				err = fmt.Errorf("%v\n%s", err, out)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
