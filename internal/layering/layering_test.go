// Package layering checks the import rules of docs/architecture.md (the
// layers, imports pointing down only) against `go list -deps`.
package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/testinputs"
)

const module = "github.com/gomase/gomase/"

// layer names the layer of a package path (relative to the module).
func layer(p string) string {
	switch {
	case under(p, "kernel"):
		return "harness"
	case under(p, "mase/ui"):
		return "ui"
	case under(p, "mase/finetune"), under(p, "mase/compress"), under(p, "mase/nas"),
		under(p, "mase/mixedprecision"), under(p, "mase/labsetup"):
		return "lab application"
	case under(p, "kernels"):
		return "kernels"
	case under(p, "rtl"):
		return "rtl"
	case under(p, "graphviz"):
		return "graphviz"
	case under(p, "mase"):
		return "library"
	case under(p, "cmd"):
		return "command"
	case under(p, "internal"):
		return "internal"
	}
	return "other"
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// forbidden says why package p (in layer from) may not depend on package
// d (in layer to), or "" when it may.
func forbidden(p, from, d, to string) string {
	switch {
	case to == "harness" && from != "harness" && from != "command":
		return "only commands import the notebook harness (kernel/)"
	case to == "command":
		return "nothing imports a command"
	case to == "ui" && (from == "library" || from == "kernels" || from == "rtl" || from == "graphviz"):
		return "the library reports through callbacks; it imports no UI package"
	case to == "lab application" && (from == "library" || from == "ui" || from == "kernels" || from == "rtl" || from == "graphviz"):
		return "lab applications sit above the library and the UI"
	case from == "kernels" && (to == "library" || to == "rtl"):
		return "kernels are leaves: they import no mase package"
	case to == "rtl" && (from == "library" || from == "lab application" || from == "kernels"):
		return "rtl/ is imported only by the RTL flow, the UI and commands"
	case to == "internal" && (from == "kernels" || from == "graphviz"):
		return "kernels and graphviz are leaves: they import nothing of gomase"
	case to == "internal" && d != "internal/atomicfile":
		return "internal/ is test support, imported only by tests (internal/atomicfile excepted)"
	}
	return ""
}

// known are the dependencies that break the rules today, each to be
// removed by moving code (issue 18); the test fails when one disappears,
// so the list only shrinks.
var known = map[string]bool{}

func TestLayering(t *testing.T) {
	// go list runs in another process: make the test cache see the sources.
	testinputs.GoSources(t, "../..")
	out, err := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Deps", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var broken []string
	seen := map[string]bool{}
	for dec.More() {
		var pkg struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		p := strings.TrimPrefix(pkg.ImportPath, module)
		from := layer(p)
		for _, dep := range pkg.Deps {
			if !strings.HasPrefix(dep, module) {
				continue
			}
			d := strings.TrimPrefix(dep, module)
			to := layer(d)
			if from == to && from != "kernels" {
				continue
			}
			why := forbidden(p, from, d, to)
			if why == "" {
				continue
			}
			edge := p + " -> " + d
			if known[edge] {
				seen[edge] = true
				continue
			}
			broken = append(broken, fmt.Sprintf("%s (%s -> %s): %s", edge, from, to, why))
		}
	}
	sort.Strings(broken)
	for _, b := range broken {
		t.Error(b)
	}
	for edge := range known {
		if !seen[edge] {
			t.Errorf("%s no longer happens: remove it from known", edge)
		}
	}
}
