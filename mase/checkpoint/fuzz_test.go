package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ir"
)

// FuzzImportGraph feeds graph files to the import (the graph file read,
// the parameters file given), with the checksum ignored (AcceptEdited) so
// that mutations reach decoding and validation; the seeds are the MLP's
// and a small BERT's exports, sealed and as version 1 files. An input is
// refused with one line naming the graph or parameters file, or imports
// (an MLP, to a MaseGraph that exports and imports back to the same
// graph). No input
// may panic, hang or allocate what a size in it asks for.
func FuzzImportGraph(f *testing.F) {
	dir := f.TempDir()
	seeds := exportFuzzSeeds(f, dir)
	for _, s := range seeds {
		f.Add(s.js)
	}
	st := map[string][]byte{}
	for _, s := range seeds {
		st[s.name] = s.st
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		// The parameters file of the model the input names (by the text:
		// the input may not decode).
		name := "mlp"
		if strings.Contains(string(js), `"bert-tiny"`) {
			name = "bert"
		}
		jsonPath, stPath := filepath.Join(dir, "fuzz.json"), filepath.Join(dir, name+".safetensors")
		read := func() ([]byte, error) { return st[name], nil }
		mg, _, err := importBytes(jsonPath, js, stPath, read, ImportOptions{AcceptEdited: true, AcceptUnsealed: true})
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, "\n") || !(strings.Contains(msg, jsonPath) || strings.Contains(msg, stPath)) {
				t.Fatalf("error %q, want one line naming %s or %s", msg, jsonPath, stPath)
			}
			return
		}
		if name != "mlp" {
			return // exporting BERT identifies it by building bert-tiny itself: too slow here
		}
		base := filepath.Join(t.TempDir(), "again")
		if err := Export(base, mg, Spec{}); err != nil {
			t.Fatalf("an imported graph does not export: %v", err)
		}
		back, err := Import(base)
		if err != nil {
			t.Fatalf("an imported graph, exported, does not import: %v", err)
		}
		if a, b := mg.Graph.String(), back.Graph.String(); a != b {
			t.Fatalf("graph after export and import:\n%s\nwant\n%s", b, a)
		}
	})
}

// fuzzSeed is one seed graph file and its parameters.
type fuzzSeed struct {
	name   string
	js, st []byte
}

// exportFuzzSeeds exports the flip cases (MLP, small BERT) and returns
// their graph files, sealed and as version 1 files.
func exportFuzzSeeds(f *testing.F, dir string) []fuzzSeed {
	f.Helper()
	var out []fuzzSeed
	for _, c := range exportFlipCases(f, dir) {
		if c.name == "bert" {
			// Without its metadata: a smaller input is cheaper to mutate
			// and to minimise.
			if err := Export(c.base, &ir.MaseGraph{Graph: withoutMeta(c.mg.Graph), Model: c.mg.Model, InputNames: c.mg.InputNames}, Spec{}); err != nil {
				f.Fatal(err)
			}
			js, err := os.ReadFile(c.base + ".json")
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, fuzzSeed{c.name, js, c.st})
			continue
		}
		out = append(out, fuzzSeed{c.name, c.js, c.st}, fuzzSeed{c.name, asVersion1(f, c.js), c.st})
	}
	return out
}

// withoutMeta drops every node's metadata from g, in place, and returns it.
func withoutMeta(g *ir.Graph) *ir.Graph {
	for _, n := range g.Nodes() {
		n.Meta = nil
	}
	return g
}
