package layering

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/testinputs"
)

// TestLayering checks every package of the module against the rules.
func TestLayering(t *testing.T) {
	// go list runs in another process: make the test cache see the sources.
	testinputs.GoSources(t, "../..")
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", Module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []Package
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p Package
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if Layer(strings.TrimPrefix(p.ImportPath, Module)) == Other {
			t.Errorf("%s: its path names no layer (docs/architecture.md lists the folders)", p.ImportPath)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	for _, b := range Breaks(pkgs) {
		t.Error(b)
	}
}

func TestLayerFromPath(t *testing.T) {
	for p, want := range map[string]string{
		"cmd/mase":                 Command,
		"kernel/runner":            Harness,
		"mase/lab/finetune":        LabApplication,
		"mase/lab/labsetup/scale":  LabApplication,
		"mase/ui/plot":             UI,
		"mase/train":               Library,
		"mase":                     Library,
		"mase/labels":              Library, // a sibling whose name starts like lab/
		"kernels/sdpa":             Kernels,
		"rtl/emit":                 RTL,
		"graphviz/internal/initdr": Graphviz,
		"internal/atomicfile":      Internal,
		"tools/x":                  Other,
	} {
		if got := Layer(p); got != want {
			t.Errorf("Layer(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestPlantedUpwardImports: each kind of upward import is reported, and
// the downward ones are not.
func TestPlantedUpwardImports(t *testing.T) {
	dep := func(from string, to ...string) Package {
		deps := []string{"fmt"}
		for _, d := range to {
			deps = append(deps, Module+d)
		}
		return Package{ImportPath: Module + from, Deps: deps}
	}
	pkgs := []Package{
		dep("mase/train", "mase/ui/progress"), // library -> UI
		dep("mase/ir", "mase/lab/labsetup"),   // library -> lab application
		dep("kernels/sdpa", "mase/ir"),        // kernels -> library
		dep("mase/ui/plot", "kernel/runner"),  // UI -> harness
		dep("rtl/emit", "cmd/mase"),           // anything -> command
		dep("mase/passes", "rtl/emit"),        // library -> RTL
		dep("mase/data", "internal/pgtest"),   // library -> test support
		dep("mase/lab/nas", "mase/ui/plot", "mase/search", "kernels/sdpa", "internal/atomicfile"), // all allowed
		dep("cmd/mase", "kernel/runner", "mase/lab/nas", "rtl/emit"),                              // all allowed
		{ImportPath: "example.com/other", Deps: []string{Module + "cmd/mase"}},                    // not ours
	}
	pkgs = append(pkgs,
		Package{ImportPath: Module + "mase/passes", Imports: []string{Module + GPUBinding}},  // a GPU binding outside the backend
		Package{ImportPath: Module + "mase/backend", Imports: []string{Module + GPUBinding}}, // allowed
		Package{ImportPath: Module + "mase/ir", Deps: []string{Module + "mase/backend"}},     // the graph core on a backend
		Package{ImportPath: Module + "mase/nn", Deps: []string{Module + "kernels/mxint8"}},   // the same
		Package{ImportPath: Module + "mase/trace", Deps: []string{Module + "mase/backend"}})  // allowed: not the graph core
	got := Breaks(pkgs)
	want := []string{"mase/passes -> kernels/cuda", "mase/ir -> mase/backend", "mase/nn -> kernels/mxint8", "mase/train -> mase/ui/progress", "mase/ir -> mase/lab/labsetup", "kernels/sdpa -> mase/ir",
		"mase/ui/plot -> kernel/runner", "rtl/emit -> cmd/mase", "mase/passes -> rtl/emit", "mase/data -> internal/pgtest"}
	if len(got) != len(want) {
		t.Fatalf("got %d breaks, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w+" (")
		}
		if !found {
			t.Errorf("planted %s not reported; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

// maxFileLines bounds a source file outside tests and generated code: a
// longer file holds more than one thing, and splits by what it holds.
const maxFileLines = 800

func TestNoLongFiles(t *testing.T) {
	testinputs.GoSources(t, "../..")
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.go").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	files := strings.Fields(string(out))
	if len(files) < 100 {
		t.Fatalf("git ls-files found %d Go files; the module has more", len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data[:min(len(data), 400)], []byte("Code generated")) {
			continue
		}
		if n := bytes.Count(data, []byte("\n")); n > maxFileLines {
			t.Errorf("%s: %d lines (at most %d outside tests and generated code): split it by what it holds", f, n, maxFileLines)
		}
	}
}
