package synth

import (
	"fmt"
	"regexp"
	"strings"
)

// arrayDecl matches a declaration of an unpacked array of packed vectors
// written in the library's style, `logic [signed] [W-1:0] name [N-1:0]`,
// as an ANSI port (`logic` may be left out there, as emitted top levels
// do) or as a module-level or generate-block variable.
var arrayDecl = regexp.MustCompile(`(?m)^(\s*(?:(?:input|output)\s+(?:logic\s+|wire\s+)?|logic\s+))(signed\s+)?\[\s*([^\]:]+?)\s*-\s*1\s*:\s*0\s*\](\s*)(\w+)(\s*)\[\s*([^\]:]+?)\s*-\s*1\s*:\s*0\s*\]`)

// stringParam matches a `parameter string` declaration's type.
var stringParam = regexp.MustCompile(`\bparameter\s+string\s+`)

type flatArray struct {
	name, width string
	signed      bool
}

// flattenArrays rewrites one SystemVerilog source so that Yosys 0.23 can
// read it: every unpacked array of vectors `logic [W-1:0] a [N-1:0]` (ports
// included) becomes one packed vector `logic [(N)*(W)-1:0] a` with element
// i at bits [i*W +: W] — the layout of the library's lane order — and every
// indexed use a[e] becomes a[(e)*(W) +: (W)] (a[e][b] becomes a bit select;
// reads of signed arrays are wrapped in $signed). Whole-array uses (a port
// connection, `acc <= acc_next`) need no change: both sides are flattened
// alike. Arrays with other bounds (ROMs such as `rom[DEPTH]`) are left alone.
//
// The rewrite is textual and relies on the library's coding style; names of
// arrays must be unique within a file.
func flattenArrays(src string) (string, error) {
	// Yosys 0.23 has no string-typed parameters; an untyped one holds the
	// same string.
	src = stringParam.ReplaceAllString(src, "parameter ")
	var arrays []flatArray
	out := arrayDecl.ReplaceAllStringFunc(src, func(m string) string {
		g := arrayDecl.FindStringSubmatch(m)
		a := flatArray{name: g[5], width: "(" + g[3] + ")", signed: g[2] != ""}
		arrays = append(arrays, a)
		return fmt.Sprintf("%s%s[(%s)*(%s)-1:0]%s%s%s", g[1], g[2], g[7], g[3], g[4], g[5], g[6])
	})
	for _, a := range arrays {
		var err error
		out, err = rewriteUses(out, a)
		if err != nil {
			return "", err
		}
	}
	return out, nil
}

// rewriteUses rewrites every a[e] (and a[e][b]) in src.
func rewriteUses(src string, a flatArray) (string, error) {
	use := regexp.MustCompile(`\b` + regexp.QuoteMeta(a.name) + `\s*\[`)
	var b strings.Builder
	for {
		loc := use.FindStringIndex(src)
		if loc == nil {
			b.WriteString(src)
			return b.String(), nil
		}
		// skip a match that is part of a hierarchical or port name (.a[ / a.)
		if loc[0] > 0 && (src[loc[0]-1] == '.' || src[loc[0]-1] == '`' || src[loc[0]-1] == '$') {
			b.WriteString(src[:loc[1]])
			src = src[loc[1]:]
			continue
		}
		idx, end, err := bracket(src, loc[1]-1)
		if err != nil {
			return "", fmt.Errorf("synth: flattening %s: %v", a.name, err)
		}
		if strings.Contains(idx, ":") {
			return "", fmt.Errorf("synth: flattening %s: range select [%s] is not supported", a.name, idx)
		}
		sel := fmt.Sprintf("%s[(%s)*%s +: %s]", a.name, idx, a.width, a.width)
		// a second index selects a bit of the element
		rest := strings.TrimLeft(src[end:], " \t")
		if strings.HasPrefix(rest, "[") {
			off := len(src[end:]) - len(rest)
			bit, end2, err := bracket(src, end+off)
			if err != nil {
				return "", fmt.Errorf("synth: flattening %s: %v", a.name, err)
			}
			if strings.Contains(bit, ":") {
				return "", fmt.Errorf("synth: flattening %s: range select [%s] of an element is not supported", a.name, bit)
			}
			sel = fmt.Sprintf("%s[(%s)*%s + (%s)]", a.name, idx, a.width, bit)
			end = end2
		} else if a.signed && !isLHS(src[end:]) {
			sel = "$signed(" + sel + ")"
		}
		b.WriteString(src[:loc[0]])
		b.WriteString(sel)
		src = src[end:]
	}
}

// bracket returns the text inside the bracket that opens at src[open] and
// the index just past its closing bracket.
func bracket(src string, open int) (string, int, error) {
	depth := 0
	for i := open; i < len(src); i++ {
		switch src[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return src[open+1 : i], i + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf("unbalanced '[' at offset %d", open)
}

// isLHS reports whether the text after a select starts an assignment to it.
func isLHS(after string) bool {
	s := strings.TrimLeft(after, " \t")
	return strings.HasPrefix(s, "<=") || (strings.HasPrefix(s, "=") && !strings.HasPrefix(s, "=="))
}
