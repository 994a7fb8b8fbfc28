// Package nbsource handles the lab notebooks' sources (notebooks/src/*.gonb,
// jupytext percent format): parsing, formatting and rendering them as
// .ipynb, and assembling their cells into the Go programs GoNB would build,
// so that tests compile and vet every cell.
package nbsource

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/format"
	"go/scanner"
	"go/token"
	"os"
	"strings"
)

// A notebook source is the text a lab notebook is generated from: Go and
// markdown cells in jupytext's percent format, so that the Go is reviewed,
// diffed and formatted as Go rather than as JSON strings.
//
//	// %% [markdown]
//	// # A title
//	//
//	// Text.
//
//	// %%
//	//gonb:%%
//	fmt.Println("hello")
//
// A line "// %%" starts a code cell and "// %% [markdown]" a markdown cell,
// whose lines carry a "// " prefix ("//" alone for an empty line). GoNB's
// "%%" line (the start of a cell's main body) is written "//gonb:%%", as
// jupytext does. Lines before the first marker are the file's header and
// are not part of the notebook. Blank lines at the start and end of a cell
// are dropped. SourceExt is the files' extension.

// SourceExt is the extension of notebook sources (notebooks/src/NAME.gonb).
const SourceExt = ".gonb"

// SourceCell is one cell of a notebook source.
type SourceCell struct {
	// Kind is "code" or "markdown".
	Kind string
	// Text is the cell's content, without the markers and prefixes.
	Text string
	// Line is the line of the source where Text starts (1-based; 0 for
	// cells not read from a source). A code cell's lines are the source's,
	// one for one.
	Line int
}

const (
	codeMarker     = "// %%"
	markdownMarker = "// %% [markdown]"
	gonbMagic      = "//gonb:%%"
)

// ParseSource reads a notebook source.
func ParseSource(src []byte) ([]SourceCell, error) {
	var cells []SourceCell
	var cur *SourceCell
	var lines []string
	flush := func() {
		if cur == nil {
			return
		}
		for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
			lines = lines[1:]
			cur.Line++
		}
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		cur.Text = strings.Join(lines, "\n")
		cells = append(cells, *cur)
		lines = nil
	}
	for i, line := range strings.Split(strings.ReplaceAll(string(src), "\r\n", "\n"), "\n") {
		switch strings.TrimRight(line, " \t") {
		case markdownMarker:
			flush()
			cur = &SourceCell{Kind: "markdown", Line: i + 2}
			continue
		case codeMarker:
			flush()
			cur = &SourceCell{Kind: "code", Line: i + 2}
			continue
		}
		if cur == nil {
			continue // the header
		}
		if cur.Kind == "markdown" {
			switch {
			case line == "//":
				line = ""
			case strings.HasPrefix(line, "// "):
				line = line[3:]
			case strings.TrimSpace(line) == "":
			default:
				return nil, fmt.Errorf("line %d: a markdown line must start with \"// \" (or be \"//\" or empty): %q", i+1, line)
			}
		} else if strings.TrimRight(line, " \t") == gonbMagic {
			line = "%%"
		}
		lines = append(lines, line)
	}
	flush()
	for i, c := range cells {
		if c.Text == "" {
			return nil, fmt.Errorf("cell %d (%s) is empty", i+1, c.Kind)
		}
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("no cells: a cell starts with a line %q or %q", codeMarker, markdownMarker)
	}
	return cells, nil
}

// SourceHeader returns the lines of src before its first cell marker.
func SourceHeader(src []byte) string {
	var head []string
	for _, line := range strings.Split(string(src), "\n") {
		if l := strings.TrimRight(line, " \t"); l == codeMarker || l == markdownMarker {
			break
		}
		head = append(head, line)
	}
	return strings.TrimRight(strings.Join(head, "\n"), "\n")
}

// FormatSource writes cells as a notebook source after header (comment
// lines, may be empty).
func FormatSource(header string, cells []SourceCell) []byte {
	var b bytes.Buffer
	if header != "" {
		b.WriteString(strings.TrimRight(header, "\n") + "\n\n")
	}
	for i, c := range cells {
		if i > 0 {
			b.WriteString("\n")
		}
		if c.Kind == "markdown" {
			b.WriteString(markdownMarker + "\n")
			for _, l := range strings.Split(c.Text, "\n") {
				if l == "" {
					b.WriteString("//\n")
				} else {
					b.WriteString("// " + l + "\n")
				}
			}
			continue
		}
		b.WriteString(codeMarker + "\n")
		for _, l := range strings.Split(c.Text, "\n") {
			if l == "%%" {
				l = gonbMagic
			}
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

// The .ipynb layout RenderNotebook writes: nbformat 4.5 for the gomase
// kernel, fields in the order Jupyter writes them.
type (
	ipynb struct {
		Cells         []ipynbCell   `json:"cells"`
		Metadata      ipynbMetadata `json:"metadata"`
		NBFormat      int           `json:"nbformat"`
		NBFormatMinor int           `json:"nbformat_minor"`
	}
	ipynbCell struct {
		CellType       string          `json:"cell_type"`
		ID             string          `json:"id"`
		Metadata       struct{}        `json:"metadata"`
		Source         []string        `json:"source"`
		ExecutionCount json.RawMessage `json:"execution_count,omitempty"` // null for code cells
		Outputs        json.RawMessage `json:"outputs,omitempty"`         // [] for code cells
	}
	ipynbMetadata struct {
		Kernelspec struct {
			DisplayName string `json:"display_name"`
			Language    string `json:"language"`
			Name        string `json:"name"`
		} `json:"kernelspec"`
		LanguageInfo struct {
			CodemirrorMode    string `json:"codemirror_mode"`
			FileExtension     string `json:"file_extension"`
			Mimetype          string `json:"mimetype"`
			Name              string `json:"name"`
			NBConvertExporter string `json:"nbconvert_exporter"`
			PygmentsLexer     string `json:"pygments_lexer"`
			Version           string `json:"version"`
		} `json:"language_info"`
	}
)

// RenderNotebook returns the .ipynb of cells for the "Go (gomase)" kernel,
// unexecuted. Cell ids derive from name and the cell's index, so the same
// source always gives the same file.
func RenderNotebook(name string, cells []SourceCell) ([]byte, error) {
	nb := ipynb{NBFormat: 4, NBFormatMinor: 5}
	ks := &nb.Metadata.Kernelspec
	ks.DisplayName, ks.Language, ks.Name = "Go (gomase)", "go", "gomase"
	li := &nb.Metadata.LanguageInfo
	li.FileExtension, li.Mimetype, li.Name, li.PygmentsLexer, li.Version = ".go", "text/x-go", "go", "go", "go1.26"
	nb.Cells = make([]ipynbCell, len(cells))
	for i, c := range cells {
		if c.Kind != "code" && c.Kind != "markdown" {
			return nil, fmt.Errorf("cell %d: kind %q (allowed: code, markdown)", i+1, c.Kind)
		}
		sum := sha1.Sum([]byte(fmt.Sprintf("%s-%d", name, i)))
		lines := strings.Split(c.Text, "\n")
		for j := range lines[:len(lines)-1] {
			lines[j] += "\n"
		}
		nc := ipynbCell{CellType: c.Kind, ID: hex.EncodeToString(sum[:])[:8], Source: lines}
		if c.Kind == "code" {
			nc.ExecutionCount, nc.Outputs = json.RawMessage("null"), json.RawMessage("[]")
		}
		nb.Cells[i] = nc
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(nb); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ReadSource reads and parses the notebook source at path.
func ReadSource(path string) ([]SourceCell, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cells, err := ParseSource(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cells, nil
}

// NotebookFromSource reads the notebook source at path and renders the
// notebook called name.
func NotebookFromSource(name, path string) ([]byte, error) {
	cells, err := ReadSource(path)
	if err != nil {
		return nil, err
	}
	return RenderNotebook(name, cells)
}

// FormatCell returns a code cell as gofmt writes it: its declarations as a
// Go file's, its main body (after GoNB's %% line) as statements at the left
// margin.
func FormatCell(cell string) (string, error) {
	decls, body, hasBody := cell, "", false
	switch {
	case cell == "%%" || strings.HasPrefix(cell, "%%\n"):
		decls, body, hasBody = "", strings.TrimPrefix(strings.TrimPrefix(cell, "%%"), "\n"), true
	case strings.Contains(cell, "\n%%\n") || strings.HasSuffix(cell, "\n%%"):
		i := strings.Index(cell+"\n", "\n%%\n")
		decls, body, hasBody = cell[:i], strings.TrimPrefix(cell[i+3:], "\n"), true
	}
	var out []string
	if strings.TrimSpace(decls) != "" {
		f, err := format.Source([]byte("package p\n\n" + decls + "\n"))
		if err != nil {
			return "", err
		}
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(string(f), "package p\n\n"), "\n"))
	}
	if hasBody {
		out = append(out, "%%")
		if strings.TrimSpace(body) != "" {
			s, err := formatStatements(body)
			if err != nil {
				return "", err
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n"), nil
}

// formatStatements gofmt-s a list of statements, printed at the left
// margin: formatted as a function body, then moved out one tab, except the
// continuation lines of raw strings, whose text gofmt never changes.
func formatStatements(body string) (string, error) {
	const head = "package p\n\nfunc _() {\n"
	f, err := format.Source([]byte(head + body + "\n}\n"))
	if err != nil {
		return "", err
	}
	fset := token.NewFileSet()
	file := fset.AddFile("cell.go", -1, len(f))
	var sc scanner.Scanner
	sc.Init(file, f, nil, scanner.ScanComments)
	inRaw := map[int]bool{} // 1-based lines that continue a raw string
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.STRING && strings.HasPrefix(lit, "`") {
			first := file.Line(pos)
			for l := first + 1; l <= first+strings.Count(lit, "\n"); l++ {
				inRaw[l] = true
			}
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(f), "\n"), "\n")
	lines = lines[3 : len(lines)-1] // drop the package line, the blank line, "func _() {" and "}"
	for i, l := range lines {
		if !inRaw[i+4] {
			lines[i] = strings.TrimPrefix(l, "\t")
		}
	}
	return strings.Join(lines, "\n"), nil
}
