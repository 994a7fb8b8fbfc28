package labs

import (
	"go/scanner"
	"go/token"
	"html"
	"strings"
)

// goBuiltins are predeclared identifiers shown like keywords.
var goBuiltins = map[string]bool{
	"true": true, "false": true, "nil": true, "iota": true,
	"append": true, "cap": true, "clear": true, "close": true, "complex": true, "copy": true,
	"delete": true, "imag": true, "len": true, "make": true, "max": true, "min": true,
	"new": true, "panic": true, "print": true, "println": true, "real": true, "recover": true,
	"any": true, "bool": true, "byte": true, "error": true, "rune": true, "string": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "uintptr": true,
	"float32": true, "float64": true, "complex64": true, "complex128": true, "comparable": true,
}

// highlightGo returns a GoNB cell's source as HTML with <span class="k|s|c|n|b|m">
// around keywords, strings, comments, numbers, builtins and GoNB special
// lines (%%, %command, !shell). It never fails: what the Go scanner cannot
// read stays plain, escaped text.
func highlightGo(src string) string {
	// Blank out GoNB's special lines so the Go scanner sees only Go, keeping
	// byte offsets; remember them to print as "magic".
	lines := strings.SplitAfter(src, "\n")
	magic := make([]bool, len(lines))
	var goSrc strings.Builder
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "%") || strings.HasPrefix(t, "!") {
			magic[i] = true
			goSrc.WriteString(strings.Repeat(" ", len(strings.TrimRight(l, "\n"))))
			if strings.HasSuffix(l, "\n") {
				goSrc.WriteByte('\n')
			}
			continue
		}
		goSrc.WriteString(l)
	}
	code := goSrc.String()

	// class[i] is the span class of byte i of src ("" for plain).
	class := make([]string, len(src))
	fset := token.NewFileSet()
	file := fset.AddFile("cell.go", -1, len(code))
	var s scanner.Scanner
	s.Init(file, []byte(code), func(token.Position, string) {}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		start := file.Offset(pos)
		var c string
		switch {
		case tok == token.COMMENT:
			c = "c"
		case tok == token.STRING || tok == token.CHAR:
			c = "s"
		case tok == token.INT || tok == token.FLOAT || tok == token.IMAG:
			c = "n"
		case tok.IsKeyword():
			c, lit = "k", tok.String()
		case tok == token.IDENT && goBuiltins[lit]:
			c = "b"
		default:
			continue
		}
		end := start + len(lit)
		if start < 0 || end > len(src) || src[start:end] != lit {
			continue // e.g. a comment whose "\r" the scanner dropped
		}
		for i := start; i < end; i++ {
			class[i] = c
		}
	}
	off := 0
	for i, l := range lines {
		if magic[i] {
			for j := off; j < off+len(strings.TrimRight(l, "\n")); j++ {
				class[j] = "m"
			}
		}
		off += len(l)
	}

	var b strings.Builder
	for i := 0; i < len(src); {
		j := i + 1
		for j < len(src) && class[j] == class[i] {
			j++
		}
		text := html.EscapeString(src[i:j])
		if class[i] == "" {
			b.WriteString(text)
		} else {
			b.WriteString(`<span class="` + class[i] + `">` + text + `</span>`)
		}
		i = j
	}
	return b.String()
}
