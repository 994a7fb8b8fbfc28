package nbsource

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// planted is a notebook source with a mistake in three cells; cell 7
// compiles only if cell 4's greet replaced cell 2's, and holds GoNB
// special lines, which are not Go.
const planted = `// %% [markdown]
// # Planted errors

// %%
import (
	"fmt"
	"strings"
)

func greet() string { return "hi" }

// %%
//gonb:%%
fmt.Println(greet())
undefinedHelper()

// %%
func greet() int { return 1 }

// %%
//gonb:%%
fmt.Printf("%s\n", greet())

// %% [markdown]
// Special lines.

// %%
//gonb:%env A=1 \
//gonb:  B=2
!echo hi
//gonb:%%
fmt.Println(greet() + 1)
`

func TestVetNotebookSourcesFindsPlantedErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet: not in -short")
	}
	path := filepath.Join(t.TempDir(), "planted"+SourceExt)
	if err := os.WriteFile(path, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	findings, err := VetNotebookSources(filepath.Join("..", ".."), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`planted cell 2: "strings" is imported and used by no cell`,
		"planted cell 3, line 3 (" + path + ":15:1): undefined: undefinedHelper",
		"planted cell 5, line 2 (" + path + ":22:13): fmt.Printf format %s has arg greet() of wrong type int",
	}
	if strings.Join(findings, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(findings, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join("..", "..", "notebooks")); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join("..", "..", "notebooks", ".vet-*"))
	if len(left) > 0 {
		t.Errorf("VetNotebookSources left %v behind", left)
	}
}

func TestAssembleGoNB(t *testing.T) {
	src := "// %%\nimport \"fmt\"\n\ntype T struct{}\n\nfunc (T) S() string { return \"a\" }\n\nconst (\n\tA = iota\n\tB\n)\n\n" +
		"// %%\n//gonb:%%\nfmt.Println(T{}.S(), A, B)\n\n" +
		"// %%\n//gonb:%%\nfmt.Println(2)\n\n" +
		"// %%\nfunc (T) S() string { return \"b\" }\n\nfunc main() { fmt.Println(T{}.S()) }\n\n" +
		"// %%\nfunc run() {}\n//gonb:%exec run\n\n" +
		"// %%\n\n\n//gonb:%%\nfmt.Println(3)\n"
	cells, err := ParseSource([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	progs, err := AssembleGoNB("/nb/x.gonb", cells)
	if err != nil {
		t.Fatal(err)
	}
	if len(progs.Programs) != 3 || len(progs.Unused) != 0 {
		t.Fatalf("%d programs, unused %v; want 3, none", len(progs.Programs), progs.Unused)
	}
	for i, c := range []struct {
		cells     string
		has, hasn []string
	}{
		// Cells 2 and 3 declare nothing: they share cell 1's program.
		{"[1 2 3]", []string{"func gonbCell2() {\n//line /nb/x.gonb:15:1\nfmt.Println(T{}.S(), A, B)\n}",
			"func gonbCell3() {\n//line /nb/x.gonb:19:1\nfmt.Println(2)\n}", "\tA = iota\n\tB\n)", "func main() {}"}, nil},
		// The method is replaced; the cell's own main is its body.
		{"[4]", []string{`func (T) S() string { return "b" }`, "//line /nb/x.gonb:24:1\nfunc gonbCell4/*line /nb/x.gonb:24:10*/() { fmt.Println(T{}.S()) }"},
			[]string{`return "a"`}},
		// %exec runs the function; cell 6's blank lines are not its text, yet keep its lines.
		{"[5 6]", []string{"func gonbCell5() {\n//line /nb/x.gonb:28:1\nrun()\n}", "//line /nb/x.gonb:27:1\nfunc run() {}",
			"func gonbCell6() {\n//line /nb/x.gonb:34:1\nfmt.Println(3)\n}"}, nil},
	} {
		p := progs.Programs[i]
		s := string(p.Src)
		if got := fmt.Sprint(p.Cells); got != c.cells {
			t.Errorf("program %d: cells %s, want %s", i+1, got, c.cells)
		}
		for _, h := range c.has {
			if !strings.Contains(s, h) {
				t.Errorf("program %d lacks %q:\n%s", i+1, h, s)
			}
		}
		for _, h := range c.hasn {
			if strings.Contains(s, h) {
				t.Errorf("program %d has %q:\n%s", i+1, h, s)
			}
		}
	}
}

func TestAssembleGoNBParseError(t *testing.T) {
	cells, err := ParseSource([]byte("// %%\nimport \"fmt\"\n\n// %%\nfunc f() {}\n\nx := 1\n//gonb:%%\nfmt.Println(x)\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = AssembleGoNB("/nb/x.gonb", cells)
	if want := "cell 2 does not parse as Go declarations: /nb/x.gonb:7:1: expected declaration"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("AssembleGoNB of a statement before %%%%: %v, want %q", err, want)
	}
}
