package nbsource

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomase/gomase/internal/testinputs"
)

// sources returns the repository's notebook sources by name.
func sources(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "notebooks", "src", "*"+SourceExt))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no notebook sources: %v", err)
	}
	out := map[string]string{}
	for _, p := range paths {
		out[strings.TrimSuffix(filepath.Base(p), SourceExt)] = p
	}
	return out
}

// Every committed notebook is what its source generates.
func TestNotebooksMatchSources(t *testing.T) {
	for name, src := range sources(t) {
		want, err := NotebookFromSource(name, src)
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join("..", "..", "notebooks", name+".ipynb"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("notebooks/%s.ipynb differs from notebooks/src/%s%s: run go run ./kernel/cmd/notebooks", name, name, SourceExt)
		}
	}
}

// The Go of every notebook cell is gofmt-clean.
func TestNotebookCellsGofmt(t *testing.T) {
	for name, src := range sources(t) {
		cells, err := ReadSource(src)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cells {
			if c.Kind != "code" {
				continue
			}
			got, err := FormatCell(c.Text)
			if err != nil {
				t.Errorf("%s cell %d does not parse as Go: %v", name, i+1, err)
				continue
			}
			if got != c.Text {
				t.Errorf("%s cell %d is not gofmt-clean; gofmt gives:\n%s", name, i+1, got)
			}
		}
	}
}

// The Go of every notebook cell compiles and passes go vet, as GoNB
// compiles it: the declarations of the cells so far and the cell's main
// body (AssembleGoNB), against this checkout.
func TestNotebookCellsVet(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet of every notebook cell: not in -short")
	}
	// go vet runs in another process: make the test cache see what the cells compile against.
	testinputs.GoSources(t, filepath.Join("..", ".."))
	var paths []string
	for _, p := range sources(t) {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	findings, err := VetNotebookSources(filepath.Join("..", ".."), paths)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
}

func TestParseSource(t *testing.T) {
	src := "// header\n\n// %% [markdown]\n// # Title\n//\n// Text.\n\n// %%\nimport \"fmt\"\n\n// %%\n//gonb:%%\nfmt.Println(1)\n"
	cells, err := ParseSource([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []SourceCell{{"markdown", "# Title\n\nText.", 4}, {"code", `import "fmt"`, 9}, {"code", "%%\nfmt.Println(1)", 12}}
	if len(cells) != len(want) {
		t.Fatalf("cells %+v", cells)
	}
	for i := range want {
		if cells[i] != want[i] {
			t.Errorf("cell %d = %+v, want %+v", i, cells[i], want[i])
		}
	}
	if back := string(FormatSource(SourceHeader([]byte(src)), cells)); back != src {
		t.Errorf("round trip:\n%s\nwant\n%s", back, src)
	}
	for _, bad := range []struct{ src, want string }{
		{"// %% [markdown]\nno prefix\n", `line 2: a markdown line must start with "// "`},
		{"// just a header\n", "no cells"},
		{"// %%\n\n// %%\nx := 1\n", "cell 1 (code) is empty"},
	} {
		if _, err := ParseSource([]byte(bad.src)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseSource(%q) = %v, want %q", bad.src, err, bad.want)
		}
	}
}

func TestFormatCell(t *testing.T) {
	// A statement before GoNB's %% line is not a declaration.
	if _, err := FormatCell("x:=1"); err == nil {
		t.Error("FormatCell accepted a statement outside the main body")
	}
	for _, c := range []struct{ in, want string }{
		{"func f()  {}", "func f() {}"},
		{"%%\nx:=1\nfmt.Println(x)", "%%\nx := 1\nfmt.Println(x)"},
		{"var v = 1\n%%\ns := `a\n\tb`\n_ = s", "var v = 1\n%%\ns := `a\n\tb`\n_ = s"},
	} {
		got, err := FormatCell(c.in)
		if err != nil || got != c.want {
			t.Errorf("FormatCell(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
