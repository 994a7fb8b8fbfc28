package nbsource

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// A GoNBProgram is a Go program GoNB compiles while it runs a notebook's
// cells in order: the top-level declarations of the cells run so far, a
// later declaration of a name replacing the earlier one, and the main body
// (after GoNB's "%%" line) of each of Cells as a function of its own.
// Consecutive cells that declare nothing share the program of the cell
// before them, since GoNB compiles each against the same declarations.
//
// Src is package main, with //line directives that give every line the
// position it has in the notebook source, so that the compiler and go vet
// name the source's lines.
type GoNBProgram struct {
	// Cells are the 1-based indices (among all the notebook's cells, as
	// Jupyter numbers them) of the code cells this program compiles.
	Cells []int
	Src   []byte
}

// GoNBPrograms are the programs of a notebook source (see GoNBProgram).
type GoNBPrograms struct {
	Programs []GoNBProgram
	// Unused are the imports that no program uses, as "cell N: path".
	Unused []string
}

// gonbDecl is one top-level declaration a cell leaves for later cells.
type gonbDecl struct {
	keys []string // the names it declares; a later declaration of one replaces it
	text string   // Go source, //line directive first
	imp  *gonbImport
}

type gonbImport struct {
	name, path string // name is the alias, or "" for the package's own name
	cell       int
	used       bool
}

// AssembleGoNB returns the programs GoNB compiles for the notebook source
// cells read from path (the path only names the source in the programs'
// //line directives: give it absolute, or relative to where the programs
// are compiled). It follows GoNB's rules: a code cell's declarations join
// those of the cells before it, a later declaration of a name (a function,
// method, type, variable, constant, or import by its name) replaces the
// earlier one; a "%%" (or "%main") line starts the body of main, a cell's
// own func main is its body, "%exec f" runs f; other GoNB special lines
// ("%..." and "!..." commands, a trailing "\" continuing them) are not Go
// and are skipped. Like goimports, which GoNB runs before every build, a
// program drops the imports it does not use: an import is used when its
// name (its alias, else the last element of its path, less a version
// suffix and a "go-" prefix) is the left side of a selector. A package
// whose name is not that needs an alias. Unlike goimports, nothing is
// imported that no cell imports.
func AssembleGoNB(path string, cells []SourceCell) (*GoNBPrograms, error) {
	var decls []*gonbDecl
	var imports []*gonbImport
	var progs []*program
	var cur *program
	for i, c := range cells {
		if c.Kind != "code" {
			continue
		}
		cell, err := parseGoNBCell(path, i+1, c)
		if err != nil {
			return nil, err
		}
		if len(cell.decls) == 0 && cell.body == "" {
			continue // GoNB runs nothing for a cell of special commands only
		}
		for _, d := range cell.decls {
			decls = replaceDecls(decls, d)
			if d.imp != nil {
				imports = append(imports, d.imp)
			}
		}
		if len(cell.decls) > 0 || cur == nil {
			cur = &program{decls: append([]*gonbDecl(nil), decls...)}
			progs = append(progs, cur)
		}
		cur.cells = append(cur.cells, i+1)
		if cell.body != "" {
			cur.bodies = append(cur.bodies, cell.body)
		}
	}
	out := &GoNBPrograms{}
	for _, p := range progs {
		src, err := p.render()
		if err != nil {
			return nil, err
		}
		out.Programs = append(out.Programs, GoNBProgram{Cells: p.cells, Src: src})
	}
	for _, imp := range imports {
		if !imp.used {
			out.Unused = append(out.Unused, fmt.Sprintf("cell %d: %q", imp.cell, imp.path))
		}
	}
	return out, nil
}

// replaceDecls adds d to decls, dropping the declarations it replaces.
func replaceDecls(decls []*gonbDecl, d *gonbDecl) []*gonbDecl {
	out := decls[:0:0]
	for _, old := range decls {
		shared := false
		for _, k := range old.keys {
			for _, nk := range d.keys {
				shared = shared || k == nk
			}
		}
		if !shared {
			out = append(out, old)
		}
	}
	return append(out, d)
}

// gonbCell is a code cell taken apart.
type gonbCell struct {
	decls []*gonbDecl
	body  string // a function holding the cell's main body, "" if none
}

// lineDirective makes the next line's position line:col of the source file.
func lineDirective(file string, line, col int) string {
	return fmt.Sprintf("//line %s:%d:%d\n", file, line, col)
}

// parseGoNBCell splits cell number idx into its declarations and its main
// body (as a function named after the cell).
func parseGoNBCell(file string, idx int, c SourceCell) (*gonbCell, error) {
	lines := strings.Split(c.Text, "\n")
	fn := fmt.Sprintf("gonbCell%d", idx)
	var body string
	declEnd := len(lines)
	for i := 0; i < len(lines); i++ {
		l := strings.TrimPrefix(lines[i], "//gonb:")
		if len(l) < 2 || (l[0] != '%' && l[0] != '!') {
			continue
		}
		first := i
		for strings.HasSuffix(lines[i], `\`) && i+1 < len(lines) {
			lines[i] = ""
			i++
		}
		lines[i] = ""
		switch {
		case l == "%%" || strings.HasPrefix(l, "%% ") || strings.HasPrefix(l, "%%\t") || strings.HasPrefix(l, "%main"):
			if declEnd > first {
				declEnd = first
			}
		case strings.HasPrefix(l, "%exec"):
			f := strings.Fields(l)
			if len(f) < 2 {
				return nil, fmt.Errorf("%s:%d: %%exec names no function", file, c.Line+first)
			}
			body = fmt.Sprintf("func %s() {\n%s%s()\n}\n", fn, lineDirective(file, c.Line+first, 1), f[1])
		}
	}
	cell := &gonbCell{}
	if declEnd < len(lines) {
		body = fmt.Sprintf("func %s() {\n%s%s\n}\n", fn, lineDirective(file, c.Line+declEnd+1, 1),
			strings.Join(lines[declEnd+1:], "\n"))
	}
	declSrc := strings.Join(lines[:declEnd], "\n")
	if strings.TrimSpace(declSrc) == "" {
		cell.body = body
		return cell, nil
	}
	// The declarations, parsed as a file whose line 2 is the cell's first.
	src := "package main\n" + declSrc + "\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("cell %d does not parse as Go declarations: %s", idx, cellParseError(err, file, c.Line))
	}
	tf := fset.File(f.Pos())
	at := func(p token.Pos) (line, col int) {
		pos := tf.Position(p)
		return c.Line + pos.Line - 2, pos.Column
	}
	// text is the source from..to, which starts with a //line directive.
	text := func(from, to token.Pos) string {
		l, col := at(from)
		return lineDirective(file, l, col) + src[tf.Offset(from):tf.Offset(to)] + "\n"
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			key := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				key = recvType(d.Recv.List[0].Type) + "~" + key
			} else if key == "main" {
				// The cell's own main is its body, renamed; an inline
				// directive keeps the positions after the name.
				l, col := at(d.Name.End())
				l0, col0 := at(d.Pos())
				body = lineDirective(file, l0, col0) + src[tf.Offset(d.Pos()):tf.Offset(d.Name.Pos())] + fn + fmt.Sprintf("/*line %s:%d:%d*/", file, l, col) +
					src[tf.Offset(d.Name.End()):tf.Offset(d.End())] + "\n"
				continue
			}
			cell.decls = append(cell.decls, &gonbDecl{keys: []string{key}, text: text(d.Pos(), d.End())})
		case *ast.GenDecl:
			kw := d.Tok.String()
			if d.Tok == token.CONST && hasIota(d) {
				// Specs that repeat the one before them go together.
				var keys []string
				for _, s := range d.Specs {
					keys = append(keys, specNames(s, idx)...)
				}
				cell.decls = append(cell.decls, &gonbDecl{keys: keys, text: text(d.Pos(), d.End())})
				continue
			}
			for _, s := range d.Specs {
				decl := &gonbDecl{keys: specNames(s, idx), text: kw + " (\n" + text(s.Pos(), s.End()) + ")\n"}
				if is, ok := s.(*ast.ImportSpec); ok {
					p, _ := strconv.Unquote(is.Path.Value)
					decl.imp = &gonbImport{path: p, cell: idx}
					if is.Name != nil {
						decl.imp.name = is.Name.Name
					}
				}
				cell.decls = append(cell.decls, decl)
			}
		}
	}
	cell.body = body
	return cell, nil
}

// cellParseError writes the first error of parsing a cell's declarations
// with its position in the source (the cell's first line, at source line
// first, was line 2 of what was parsed).
func cellParseError(err error, file string, first int) string {
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return err.Error()
	}
	e := list[0]
	return fmt.Sprintf("%s:%d:%d: %s", file, first+e.Pos.Line-2, e.Pos.Column, e.Msg)
}

// recvType names a method's receiver type as GoNB keys it.
func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "unknown"
}

// hasIota reports whether a const declaration has a spec without values
// (which repeats the spec before it).
func hasIota(d *ast.GenDecl) bool {
	for _, s := range d.Specs {
		if vs, ok := s.(*ast.ValueSpec); ok && len(vs.Values) == 0 {
			return true
		}
	}
	return false
}

// specNames are the keys of a spec: its names ("_" is never replaced) or,
// for an import, its alias or path.
func specNames(s ast.Spec, cell int) []string {
	switch s := s.(type) {
	case *ast.ImportSpec:
		if s.Name != nil && s.Name.Name != "_" && s.Name.Name != "." {
			return []string{"import~" + s.Name.Name}
		}
		return []string{"import~" + s.Path.Value}
	case *ast.TypeSpec:
		return []string{s.Name.Name}
	case *ast.ValueSpec:
		var keys []string
		for i, n := range s.Names {
			if n.Name == "_" {
				keys = append(keys, fmt.Sprintf("_~%d.%d.%d", cell, n.Pos(), i))
				continue
			}
			keys = append(keys, n.Name)
		}
		return keys
	}
	return nil
}

// program is a GoNBProgram being assembled.
type program struct {
	decls  []*gonbDecl
	cells  []int
	bodies []string
}

// render writes the program: its imports that the rest uses, the
// declarations, the cells' bodies, and an empty main.
func (p *program) render() ([]byte, error) {
	var rest bytes.Buffer
	for _, d := range p.decls {
		if d.imp == nil {
			rest.WriteString(d.text)
		}
	}
	for _, b := range p.bodies {
		rest.WriteString(b)
	}
	rest.WriteString("func main() {}\n")
	used, err := selectorBases("package main\n" + rest.String())
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "// Cells %v of a notebook, as GoNB compiles them.\n\npackage main\n\n", p.cells)
	for _, d := range p.decls {
		imp := d.imp
		if imp == nil {
			continue
		}
		name := imp.name
		if name == "" {
			name = assumedPackageName(imp.path)
		}
		if name == "_" || name == "." || used[name] {
			imp.used = true
			out.WriteString(d.text)
		}
	}
	out.Write(rest.Bytes())
	return out.Bytes(), nil
}

// selectorBases returns the identifiers used as the left side of a
// selector (x in x.Sel) in the Go file src.
func selectorBases(src string) (map[string]bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used, nil
}

// assumedPackageName is the name goimports assumes a package at importPath
// has: the last path element, less a version element ("v2") and a "go-"
// prefix, up to its first character that cannot be in an identifier.
func assumedPackageName(importPath string) string {
	base := path.Base(importPath)
	if strings.HasPrefix(base, "v") {
		if _, err := strconv.Atoi(base[1:]); err == nil && path.Dir(importPath) != "." {
			base = path.Base(path.Dir(importPath))
		}
	}
	base = strings.TrimPrefix(base, "go-")
	if i := strings.IndexFunc(base, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}); i >= 0 {
		base = base[:i]
	}
	return base
}

// VetNotebookSources runs go vet over the programs GoNB compiles for each
// notebook source (AssembleGoNB), in one go vet run from root, the
// repository root, so that the cells compile against this checkout. The
// programs are packages of a temporary folder under root/notebooks that
// holds no file: their Go files are an overlay (go help build), written to
// the system's temporary folder; both are removed before it returns.
//
// It returns a finding per problem, naming the notebook, the cell
// (1-based, as Jupyter numbers them), the source position and the message:
// compile errors (go vet reports the first of each program), vet findings,
// and imports no cell uses. The error is for what kept go vet from
// running.
func VetNotebookSources(root string, paths []string) ([]string, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	pkgRoot, err := os.MkdirTemp(filepath.Join(root, "notebooks"), ".vet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(pkgRoot)
	backing, err := os.MkdirTemp("", "gomase-nbvet-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(backing)

	var findings, pkgs []string
	overlay := map[string]string{}
	cellsOf := map[string][]SourceCell{} // by absolute source path
	for k, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		cells, err := ReadSource(abs)
		if err != nil {
			return nil, err
		}
		cellsOf[abs] = cells
		name := strings.TrimSuffix(filepath.Base(abs), SourceExt)
		progs, err := AssembleGoNB(abs, cells)
		if err != nil {
			findings = append(findings, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		for _, u := range progs.Unused {
			findings = append(findings, fmt.Sprintf("%s %s is imported and used by no cell", name, u))
		}
		for i, prog := range progs.Programs {
			dir := filepath.Join(pkgRoot, fmt.Sprintf("%s_%d_%d", sanitizeDir(name), k+1, i+1))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return nil, err
			}
			file := filepath.Join(backing, filepath.Base(dir)+".go")
			if err := os.WriteFile(file, prog.Src, 0o644); err != nil {
				return nil, err
			}
			overlay[filepath.Join(dir, "main.go")] = file
			pkgs = append(pkgs, "./"+filepath.ToSlash(relBelow(root, dir)))
		}
	}
	if len(pkgs) == 0 {
		return findings, nil
	}
	ov, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		return nil, err
	}
	ovPath := filepath.Join(backing, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("go", append([]string{"vet", "-overlay", ovPath}, pkgs...)...)
	cmd.Dir = root
	out, runErr := cmd.CombinedOutput()
	vetFindings := vetFindings(string(out), root, cellsOf)
	if runErr != nil && len(vetFindings) == 0 {
		return nil, fmt.Errorf("go vet: %v\n%s", runErr, out)
	}
	return append(findings, vetFindings...), nil
}

// relBelow returns p relative to root when it is below root, else p.
func relBelow(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return p
	}
	return r
}

// sanitizeDir makes a notebook name a valid import path element.
func sanitizeDir(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, name)
}

// vetPosRE matches a position in go vet's output: FILE:LINE[:COL]: MESSAGE,
// after an optional "vet: ".
var vetPosRE = regexp.MustCompile(`^(?:vet: )?(\S+?):(\d+)(?::(\d+))?: (.*)$`)

// vetFindings turns go vet's output into findings, one per distinct
// message, in the order of the sources' lines: a position in a notebook
// source names the notebook and cell. Other lines (a go command error,
// say) come first, as they are.
func vetFindings(out, root string, cellsOf map[string][]SourceCell) []string {
	type finding struct {
		file      string
		line, col int
		text      string
	}
	var other []string
	var found []finding
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" || strings.HasPrefix(line, "#") || seen[line] {
			continue
		}
		seen[line] = true
		m := vetPosRE.FindStringSubmatch(line)
		if m == nil || !strings.HasSuffix(m[1], SourceExt) {
			other = append(other, line)
			continue
		}
		f := finding{file: m[1]}
		if !filepath.IsAbs(f.file) {
			f.file = filepath.Join(root, f.file)
		}
		f.line, _ = strconv.Atoi(m[2])
		f.col, _ = strconv.Atoi(m[3])
		name := strings.TrimSuffix(filepath.Base(f.file), SourceExt)
		pos := relBelow(root, f.file) + ":" + m[2]
		if m[3] != "" {
			pos += ":" + m[3]
		}
		if idx, cellLine := sourceCellAt(cellsOf[f.file], f.line); idx > 0 {
			f.text = fmt.Sprintf("%s cell %d, line %d (%s): %s", name, idx, cellLine, pos, m[4])
		} else {
			f.text = fmt.Sprintf("%s (%s): %s", name, pos, m[4])
		}
		found = append(found, f)
	}
	slices.SortStableFunc(found, func(a, b finding) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col))
	})
	findings := other
	for i, f := range found {
		if i == 0 || f.text != found[i-1].text {
			findings = append(findings, f.text)
		}
	}
	return findings
}

// sourceCellAt returns the 1-based index of the cell holding source line l
// and the line within the cell (0, 0 when no cell holds it).
func sourceCellAt(cells []SourceCell, l int) (idx, line int) {
	for i, c := range cells {
		n := strings.Count(c.Text, "\n") + 1
		if c.Line > 0 && l >= c.Line && l < c.Line+n {
			return i + 1, l - c.Line + 1
		}
	}
	return 0, 0
}
