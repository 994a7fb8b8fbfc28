package main

import (
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gomase/gomase/internal/testinputs"
)

// nobody is the second user: Debian's nobody/nogroup.
const nobody = 65534

// TestSecondUser runs the mase binary as a second user of the machine, with
// a TMPDIR where root's go-graphviz cache already is (made as go-graphviz
// makes it: go-graphviz/ 0755 holding wazero's version folder 0700), and
// checks that `mase --help` and a drawing work without a Go stack trace and
// leave nothing in TMPDIR.
func TestSecondUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs mase as uid 65534 (CI and the dev machines run tests as root)")
	}
	if testing.Short() {
		t.Skip("builds the mase binary")
	}
	testinputs.GoSources(t, "../..")
	root, err := os.MkdirTemp("", "mase-second-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	bin := filepath.Join(root, "mase")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// TMPDIR like /tmp (01777), with root's cache in it.
	tmp := filepath.Join(root, "tmp")
	home := filepath.Join(root, "home")
	wazeroDir := filepath.Join(tmp, "go-graphviz", "wazero-"+wazeroVersion(t, bin)+"-"+runtime.GOARCH+"-"+runtime.GOOS)
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{root, 0o755}, {tmp, 0o1777}, {filepath.Dir(wazeroDir), 0o755}, {wazeroDir, 0o700}, {home, 0o755}} {
		if err := os.MkdirAll(d.path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(wazeroDir, "compiled"), []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	before := tree(t, tmp)

	asNobody := func(homeDir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = home
		cmd.Env = append(withoutVars(os.Environ(), "TMPDIR", "HOME", "XDG_CACHE_HOME"), "TMPDIR="+tmp, "HOME="+homeDir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "goroutine ") || strings.Contains(string(out), "panic:") {
			t.Fatalf("mase %s as uid %d: %v\n%.3000s", strings.Join(args, " "), nobody, err, out)
		}
		if after := tree(t, tmp); !slices.Equal(after, before) {
			t.Errorf("mase %s left in TMPDIR: %v (before: %v)", strings.Join(args, " "), after, before)
		}
		return string(out)
	}

	// No usable home: a private temporary folder, removed.
	if out := asNobody("/nonexistent", "--help"); !strings.Contains(out, "graph") {
		t.Errorf("--help: %.500s", out)
	}
	// A home of its own: the compiled code is kept there.
	svg := filepath.Join(home, "g.svg")
	asNobody(home, "graph", "--model", "mlp", "--draw", svg)
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("drawing: %v %.200s", err, b)
	}
	if kept, _ := filepath.Glob(filepath.Join(home, ".cache", "gomase", "graphviz", "wazero", "wazero-*", "*")); len(kept) == 0 {
		t.Errorf("no compiled code kept in the second user's cache folder")
	}
}

// wazeroVersion reads the wazero version the binary was built with.
func wazeroVersion(t *testing.T, bin string) string {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range info.Deps {
		if d.Path == "github.com/tetratelabs/wazero" {
			if d.Replace != nil {
				d = d.Replace
			}
			return d.Version
		}
	}
	t.Fatal("the binary has no wazero")
	return ""
}

// tree lists the paths below dir.
func tree(t *testing.T, dir string) []string {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, strings.TrimPrefix(path, dir))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func withoutVars(env []string, names ...string) []string {
	var kept []string
	for _, kv := range env {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(kv, n+"=") }) {
			kept = append(kept, kv)
		}
	}
	return kept
}
