package nbsource

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlockRE is a fenced Go block of a Markdown file.
var goBlockRE = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestGettingStartedCellsVet: the first notebook of docs/getting-started.md
// (its Go blocks after "Here is a first notebook", one cell each)
// compiles and passes go vet as GoNB would run it.
func TestGettingStartedCellsVet(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "Here is a first notebook")
	if !ok {
		t.Fatal(`docs/getting-started.md has no "Here is a first notebook"`)
	}
	section, _, _ := strings.Cut(after, "\n## ")
	var cells []SourceCell
	for _, m := range goBlockRE.FindAllStringSubmatch(section, -1) {
		cells = append(cells, SourceCell{Kind: "code", Text: strings.TrimRight(m[1], "\n")})
	}
	if len(cells) < 2 {
		t.Fatalf("found %d Go cells in the first notebook, want its declarations and at least one %%%% cell", len(cells))
	}
	path := filepath.Join(t.TempDir(), "getting_started"+SourceExt)
	if err := os.WriteFile(path, FormatSource("// docs/getting-started.md's first notebook\n", cells), 0o644); err != nil {
		t.Fatal(err)
	}
	findings, err := VetNotebookSources(filepath.Join("..", ".."), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
}
