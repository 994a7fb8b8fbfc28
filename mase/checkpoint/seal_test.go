package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"

	"github.com/gomase/gomase/mase/ir"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/nn"
	"github.com/gomase/gomase/mase/trace"
)

// TestExportSeals: the graph file's second line is the SHA-256 of the
// file without that line (what `sed 2d model.json | sha256sum` prints),
// and the file is version 2.
func TestExportSeals(t *testing.T) {
	dir := t.TempDir()
	exportMLP(t, dir, "m", 1)
	js, err := os.ReadFile(filepath.Join(dir, "m.json"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitN(js, []byte("\n"), 3)
	body := slices.Concat(lines[0], []byte("\n"), lines[2])
	if want := fmt.Sprintf(` "checksum": "sha256:%x",`, sha256.Sum256(body)); string(lines[1]) != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}
	if !bytes.Contains(body, []byte("\n \"version\": 2,\n")) {
		t.Errorf("not a version 2 file: %.200s", js)
	}
	_, rep, err := ImportWith(filepath.Join(dir, "m"), ImportOptions{})
	if err != nil || rep.Checksum != ChecksumVerified || rep.Version != 2 || len(rep.Notes) != 0 {
		t.Errorf("report %+v, %v; want version 2, checksum verified, no notes", rep, err)
	}
}

// TestImportVersion1: graph files written before checksums (testdata/v1,
// exported by the version 1 code: the lab's MLP, and a 2-layer BERT with
// metadata) are refused by Import, which cannot verify them; with
// AcceptUnsealed they import, validated, with a note that they could not
// be checked, and compute what the models they were exported from compute.
func TestImportVersion1(t *testing.T) {
	bert, err := models.NewBertForSequenceClassification(smallBertConfig(), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		base  string
		model func() (*flipCase, error)
	}{
		{"testdata/v1/mlp", func() (*flipCase, error) {
			m, err := models.NewMLP(3)
			return &flipCase{in: map[string]*tensors.Tensor{"x": tensors.FromValue([][]float32{{1, -2, 3, -4}})}, mg: traced(t, m)}, err
		}},
		{"testdata/v1/bert_small", func() (*flipCase, error) {
			return &flipCase{in: map[string]*tensors.Tensor{"input_ids": tensors.FromValue(smallBertIDs)}, mg: traced(t, bert)}, nil
		}},
	} {
		t.Run(filepath.Base(c.base), func(t *testing.T) {
			_, err := Import(c.base)
			if err == nil || !strings.Contains(err.Error(), "is a version 1 file, written before checksums, so it cannot be verified") || strings.Contains(err.Error(), "\n") {
				t.Errorf("Import without AcceptUnsealed: %v; want a one-line refusal", err)
			}
			mg, rep, err := ImportWith(c.base, ImportOptions{AcceptUnsealed: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Version != 1 || rep.Checksum != ChecksumAbsent || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "version 1 graph file, written before checksums") {
				t.Errorf("report %+v, want version 1, checksum absent and a note", rep)
			}
			orig, err := c.model()
			if err != nil {
				t.Fatal(err)
			}
			want, err := forward(orig.mg, orig.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := forward(mg, orig.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Error("the version 1 checkpoint computes something else than the model it was exported from")
			}
		})
	}
}

// TestAcceptEdited: a graph file edited on purpose is refused by Import,
// imported by ImportWith with AcceptEdited (validated, and reported), and
// sealed again by exporting the result; an invalid edit is still refused.
func TestAcceptEdited(t *testing.T) {
	dir := t.TempDir()
	c := exportFlipCases(t, dir)[0]
	// The edit: relu → leaky_relu with a slope, a change that validates.
	js := replaceOnce(t, c.js, `"target":"relu","args":[{"node":"fc1"}],"kwargs":{"inplace":false}`,
		`"target":"leaky_relu","args":[{"node":"fc1"}],"kwargs":{"inplace":false,"negative_slope":{"float":0.5}}`)
	base := filepath.Join(dir, "edited")
	os.WriteFile(base+".json", js, 0o644)
	os.WriteFile(base+".safetensors", c.st, 0o644)
	if _, err := Import(base); err == nil || !strings.Contains(err.Error(), "is corrupt or was edited: its content does not match its checksum") ||
		!strings.Contains(err.Error(), "use checkpoint.ImportWith with AcceptEdited") {
		t.Errorf("Import of an edited file: %v", err)
	}
	mg, rep, err := ImportWith(base, ImportOptions{AcceptEdited: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checksum != ChecksumIgnored || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "imported as edited") {
		t.Errorf("report %+v", rep)
	}
	if mg.Graph.Node("relu").Target != "leaky_relu" {
		t.Error("the edit was not imported")
	}
	out, err := forward(mg, c.in)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := forward(c.mg, c.in); slices.EqualFunc(out, want, slices.Equal) {
		t.Error("leaky_relu(0.5) computes what relu does on inputs with negative values")
	}
	if err := Export(base, mg, Spec{Model: "mlp"}); err != nil {
		t.Fatal(err)
	}
	if _, rep, err := ImportWith(base, ImportOptions{}); err != nil || rep.Checksum != ChecksumVerified {
		t.Errorf("re-exported: %+v, %v", rep, err)
	}

	// Reformatted (the checksum line is no longer second), and an edit that
	// does not validate.
	os.WriteFile(base+".json", bytes.Replace(c.js, []byte("{\n"), []byte("{ \n"), 1), 0o644)
	os.WriteFile(base+".safetensors", c.st, 0o644)
	if _, err := Import(base); err == nil || !strings.Contains(err.Error(), "its second line is not the checksum line Export writes") {
		t.Errorf("reformatted: %v", err)
	}
	if _, _, err := ImportWith(base, ImportOptions{AcceptEdited: true}); err != nil {
		t.Errorf("reformatted, AcceptEdited: %v", err)
	}
	os.WriteFile(base+".json", replaceOnce(t, c.js, `"target":"fc1"`, `"target":"fc2"`), 0o644)
	if _, _, err := ImportWith(base, ImportOptions{AcceptEdited: true}); err == nil || !strings.Contains(err.Error(), `call_module target "fc2" is not a module of the model`) {
		t.Errorf("invalid edit, AcceptEdited: %v", err)
	}
	// The parameters file is checked whatever AcceptEdited says.
	os.WriteFile(base+".json", c.js, 0o644)
	os.WriteFile(base+".safetensors", flipped(c.st, [2]int{len(c.st) - 1, 0}), 0o644)
	if _, _, err := ImportWith(base, ImportOptions{AcceptEdited: true}); err == nil || !strings.Contains(err.Error(), "is corrupt or was edited, or the two files come from different exports") {
		t.Errorf("flipped parameters, AcceptEdited: %v", err)
	}
}

// traced traces m with its default inputs.
func traced(t *testing.T, m *nn.Model) *ir.MaseGraph {
	t.Helper()
	mg, err := trace.NewMaseGraph(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return mg
}

// TestBitFlipsValidatedOnly runs TestBitFlips's graph-file flips with the
// checksum ignored (AcceptEdited), so that validation alone judges them:
// every flip is refused in one line naming the graph file, or imports to a
// graph that runs. Without validation, 14 of these 600 flips imported
// graphs that failed when run (an unknown function, a module the model
// lacks, a tensor where an int belongs). Validation cannot catch every
// change (a call_module target layer.0 → layer.1 is valid and computes
// something else; a view size 2 → 3 fails only on the input's shape): the
// checksum does. The counts are logged.
func TestBitFlipsValidatedOnly(t *testing.T) {
	dir := t.TempDir()
	for _, c := range exportFlipCases(t, dir) {
		t.Run(c.name, func(t *testing.T) {
			want, err := forward(c.mg, c.in)
			if err != nil {
				t.Fatal(err)
			}
			base := filepath.Join(dir, "flip_"+c.name)
			if err := os.WriteFile(base+".safetensors", c.st, 0o644); err != nil {
				t.Fatal(err)
			}
			var refused, same, differ, fail int
			for _, at := range flips(300, len(c.js)) {
				if err := os.WriteFile(base+".json", flipped(c.js, at), 0o644); err != nil {
					t.Fatal(err)
				}
				mg, _, err := ImportWith(base, ImportOptions{AcceptEdited: true})
				if err != nil {
					refused++
					if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, base+".json") {
						t.Errorf("byte %d bit %d: error %q, want one line naming %s.json", at[0], at[1], msg, base)
					}
					continue
				}
				switch out, err := forward(mg, c.in); {
				case err != nil:
					fail++
					t.Errorf("byte %d bit %d (%s): validated, imported, and fails when run: %v", at[0], at[1], lineAt(c.js, at[0]), err)
				case slices.EqualFunc(out, want, slices.Equal):
					same++
				default:
					differ++
				}
			}
			t.Logf("validation alone: %d flips refused; imported: %d same output, %d different output, %d failing when run", refused, same, differ, fail)
		})
	}
}
