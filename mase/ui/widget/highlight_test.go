package widget

import (
	"strings"
	"testing"
)

func TestHighlightGo(t *testing.T) {
	got, err := Highlight("go", "%%\nx := \"s<\" // c\nfor i := range 3 { _ = len(x) }\n!ls")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<span class="m">%%</span>`, `<span class="s">&#34;s&lt;&#34;</span>`, `<span class="c">// c</span>`,
		`<span class="k">for</span>`, `<span class="n">3</span>`, `<span class="b">len</span>`, `<span class="m">!ls</span>`} {
		if !strings.Contains(got, want) {
			t.Errorf("Highlight(go) lacks %q in:\n%s", want, got)
		}
	}
	// Not Go at all: must come back escaped, never lost.
	got, _ = Highlight("go", "<<< ` unterminated")
	if !strings.Contains(got, "&lt;&lt;&lt;") || !strings.Contains(got, "unterminated") {
		t.Errorf("Highlight(go) lost text: %q", got)
	}
}

func TestHighlightSystemVerilog(t *testing.T) {
	src := "`timescale 1ns/1ps\nmodule m #(parameter int unsigned WIDTH = 8, parameter N = 4) (\n" +
		"  input logic [WIDTH-1:0] a, /* a block\n  comment */ output logic y);\n" +
		"  localparam L = 8'hFF; // line comment\n  assign y = a == 'd3 ? 4'sb1010 : N;\n  initial $display(\"x=%d\", WIDTH);\nendmodule\n"
	got, err := Highlight("systemverilog", src)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<span class=\"m\">`timescale</span>",
		`<span class="k">module</span>`, `<span class="k">parameter</span>`, `<span class="p">WIDTH</span>`,
		`<span class="p">N</span>`, `<span class="p">L</span>`,
		// the block comment spans two lines: each line gets its own span
		`<span class="c">/* a block</span>` + "\n" + `<span class="c">  comment */</span>`,
		`<span class="n">8&#39;hFF</span>`, `<span class="n">&#39;d3</span>`, `<span class="n">4&#39;sb1010</span>`,
		`<span class="c">// line comment</span>`, `<span class="s">&#34;x=%d&#34;</span>`, `<span class="k">$display</span>`,
		`<span class="k">endmodule</span>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Highlight(systemverilog) lacks %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, `<span class="p">a</span>`) {
		t.Errorf("port a marked as a parameter:\n%s", got)
	}
	// Every line keeps its text: strip the tags and compare.
	plain := strings.NewReplacer("&#39;", "'", "&#34;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(stripTags(got))
	if plain != strings.TrimRight(src, "\n")+"" && plain != src {
		t.Errorf("highlighting changed the text:\n%q\nwant\n%q", plain, src)
	}
	if _, err := Highlight("vhdl", "x"); err == nil || !strings.Contains(err.Error(), "allowed: go, sv, systemverilog, text, verilog") {
		t.Errorf("Highlight(vhdl) = %v, want an error listing the languages", err)
	}
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
