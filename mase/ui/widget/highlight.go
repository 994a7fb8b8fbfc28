package widget

import (
	"fmt"
	"go/scanner"
	"go/token"
	"html"
	"sort"
	"strings"
)

// Token classes of the highlighter: the class attribute of a <span> around
// a token. Reports and widgets colour them with the same style sheet.
const (
	ClassKeyword   = "k" // keywords
	ClassString    = "s" // string and character literals
	ClassComment   = "c" // comments
	ClassNumber    = "n" // numeric literals, sized Verilog literals included
	ClassBuiltin   = "b" // Go's predeclared identifiers
	ClassDirective = "m" // GoNB special lines (%%, %cmd, !shell), Verilog `directives
	ClassParameter = "p" // SystemVerilog names declared with parameter/localparam
)

// Languages lists the language names Highlight accepts.
func Languages() []string {
	names := make([]string, 0, len(lexers))
	for n := range lexers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lexers give every byte of a source its token class ("" for plain).
var lexers = map[string]func(src string) []string{
	"go":            classifyGo,
	"systemverilog": classifySV,
	"verilog":       classifySV,
	"sv":            classifySV,
	"text":          func(src string) []string { return make([]string, len(src)) },
}

// Highlight returns src as HTML: text escaped, tokens wrapped in
// <span class="k|s|c|n|b|m|p"> (see the Class constants). Languages:
// go (GoNB cells: special lines count as directives), systemverilog
// (aliases sv, verilog) and text. It never fails on odd input: what the
// lexer cannot read stays plain, escaped text.
func Highlight(language, src string) (string, error) {
	lines, err := highlightLines(language, src)
	if err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// highlightLines highlights src and splits the result into lines, each
// with balanced spans (a comment spanning lines is closed and reopened).
func highlightLines(language, src string) ([]string, error) {
	lex, ok := lexers[strings.ToLower(language)]
	if !ok {
		return nil, fmt.Errorf("widget: unknown source language %q (allowed: %s)", language, strings.Join(Languages(), ", "))
	}
	src = strings.ReplaceAll(src, "\r\n", "\n")
	class := lex(src)
	var out []string
	var b strings.Builder
	for i := 0; i < len(src); {
		if src[i] == '\n' {
			out = append(out, b.String())
			b.Reset()
			i++
			continue
		}
		j := i + 1
		for j < len(src) && class[j] == class[i] && src[j] != '\n' {
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
	out = append(out, b.String())
	return out, nil
}

// goBuiltins are Go's predeclared identifiers, shown as builtins.
var goBuiltins = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`true false nil iota append cap clear close complex copy delete imag len make
		max min new panic print println real recover any bool byte error rune string int int8 int16 int32 int64
		uint uint8 uint16 uint32 uint64 uintptr float32 float64 complex64 complex128 comparable`) {
		goBuiltins[w] = true
	}
	for _, w := range strings.Fields(`module endmodule parameter localparam input output inout logic wire reg int
		integer bit byte shortint longint real string assign always always_ff always_comb always_latch begin end
		if else case casez casex endcase default for while repeat forever generate endgenerate genvar posedge
		negedge or and not initial final function endfunction task endtask return signed unsigned typedef struct
		union packed enum automatic import export package endpackage interface endinterface modport unique
		priority void const var $display $finish $fatal $error $readmemh $readmemb $clog2 $signed $unsigned`) {
		svKeywords[w] = true
	}
}

// classifyGo lexes a GoNB cell with go/scanner; GoNB's special lines
// (starting with % or !) are directives.
func classifyGo(src string) []string {
	lines := strings.SplitAfter(src, "\n")
	magic := make([]bool, len(lines))
	var code strings.Builder
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "%") || strings.HasPrefix(t, "!") {
			magic[i] = true
			code.WriteString(strings.Repeat(" ", len(strings.TrimRight(l, "\n"))))
			if strings.HasSuffix(l, "\n") {
				code.WriteByte('\n')
			}
			continue
		}
		code.WriteString(l)
	}
	goSrc := code.String()
	class := make([]string, len(src))
	fset := token.NewFileSet()
	file := fset.AddFile("cell.go", -1, len(goSrc))
	var s scanner.Scanner
	s.Init(file, []byte(goSrc), func(token.Position, string) {}, scanner.ScanComments)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		var c string
		switch {
		case tok == token.COMMENT:
			c = ClassComment
		case tok == token.STRING || tok == token.CHAR:
			c = ClassString
		case tok == token.INT || tok == token.FLOAT || tok == token.IMAG:
			c = ClassNumber
		case tok.IsKeyword():
			c, lit = ClassKeyword, tok.String()
		case tok == token.IDENT && goBuiltins[lit]:
			c = ClassBuiltin
		default:
			continue
		}
		start := file.Offset(pos)
		end := start + len(lit)
		if start < 0 || end > len(src) || src[start:end] != lit {
			continue // a comment whose "\r" the scanner dropped, say
		}
		fill(class, start, end, c)
	}
	off := 0
	for i, l := range lines {
		if magic[i] {
			fill(class, off, off+len(strings.TrimRight(l, "\n")), ClassDirective)
		}
		off += len(l)
	}
	return class
}

func fill(class []string, from, to int, c string) {
	for i := from; i < to; i++ {
		class[i] = c
	}
}

var svKeywords = map[string]bool{}

// svTypes may stand between parameter and the parameter's name.
var svTypes = map[string]bool{"int": true, "integer": true, "unsigned": true, "signed": true, "logic": true,
	"bit": true, "string": true, "real": true, "byte": true, "shortint": true, "longint": true}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// classifySV lexes SystemVerilog: comments (line and block, across lines),
// strings, `directives, numbers (12, 8'hff, 'd3, 4'sb1010), keywords and
// system tasks, and the names the source declares with parameter or
// localparam.
func classifySV(src string) []string {
	class := make([]string, len(src))
	type ident struct{ start, end int }
	var idents []ident
	params := map[string]bool{}
	// declaring is true between parameter/localparam and the name it declares.
	declaring := false
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				j = len(src) - i
			}
			fill(class, i, i+j, ClassComment)
			i += j
		case strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			end := len(src)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			fill(class, i, end, ClassComment)
			i = end
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(src) && src[j] == '"' {
				j++
			}
			j = min(j, len(src))
			fill(class, i, j, ClassString)
			i = j
		case c == '`' && i+1 < len(src) && isIdentStart(src[i+1]):
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			fill(class, i, j, ClassDirective)
			i = j
		case isDigit(c) || c == '\'' && i+1 < len(src) && strings.IndexByte("sSbBoOdDhH", src[i+1]) >= 0:
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '_') {
				j++
			}
			if j < len(src) && src[j] == '\'' && j+1 < len(src) {
				k := j + 1
				if src[k] == 's' || src[k] == 'S' {
					k++
				}
				if k < len(src) && strings.IndexByte("bBoOdDhH", src[k]) >= 0 {
					k++
					for k < len(src) && (isIdentPart(src[k]) || src[k] == '?') {
						k++
					}
					j = k
				}
			}
			if j == i { // a lone quote
				j = i + 1
			} else {
				fill(class, i, j, ClassNumber)
			}
			i = j
		case isIdentStart(c) || c == '$':
			j := i + 1
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			w := src[i:j]
			if svKeywords[w] {
				fill(class, i, j, ClassKeyword)
			} else {
				idents = append(idents, ident{i, j})
			}
			switch {
			case w == "parameter" || w == "localparam":
				declaring = true
			case declaring && svTypes[w]: // parameter int unsigned NAME
			case declaring && !svKeywords[w]:
				params[w] = true
				declaring = false
			default:
				declaring = false
			}
			i = j
		default:
			if strings.IndexByte("=;,()", c) >= 0 {
				// The declaration is over; of "parameter A = 1, B = 2" only
				// A is marked.
				declaring = false
			}
			i++
		}
	}
	for _, id := range idents {
		if params[src[id.start:id.end]] {
			fill(class, id.start, id.end, ClassParameter)
		}
	}
	return class
}
