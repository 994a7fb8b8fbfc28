package widget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/ui/plot"
)

func TestTable(t *testing.T) {
	tb := NewTable("Results <1>", "model", "accuracy", "params")
	if err := tb.AddRow("bert", 0.73515, 4386); err != nil {
		t.Fatal(err)
	}
	if err := tb.AddRow("mlp", 2.0, int64(12)); err != nil {
		t.Fatal(err)
	}
	err := tb.AddRow("short row")
	if err == nil || !strings.Contains(err.Error(), "row of 1 values for 3 columns (model, accuracy, params)") {
		t.Errorf("AddRow(short) = %v, want the counts and the columns named", err)
	}
	if tb.Rows() != 2 {
		t.Errorf("Rows = %d, want 2", tb.Rows())
	}
	h := tb.HTML()
	for _, want := range []string{
		`<caption>Results &lt;1&gt;</caption>`, `<th title="sort">accuracy</th>`, `<td>bert</td>`,
		`<td class="gmw-num" data-sort="0.73515">0.7351</td>`, `<td class="gmw-num" data-sort="4386">4386</td>`,
		`<td class="gmw-num" data-sort="2">2.0000</td>`, `<td class="gmw-num" data-sort="12">12</td>`, `window.gomaseWidgets`,
	} {
		if !strings.Contains(h, want) {
			t.Errorf("table HTML lacks %q", want)
		}
	}
	// A column's floats share their decimals; one written with an exponent leaves the column as it is.
	tb = NewTable("", "mean", "tiny")
	for _, r := range [][]any{{0.614, 1e-9}, {0.6617, 0.5}} {
		if err := tb.AddRow(r...); err != nil {
			t.Fatal(err)
		}
	}
	h = tb.HTML()
	for _, want := range []string{`>0.6140</td>`, `>0.6617</td>`, `>1e-09</td>`, `>0.5</td>`} {
		if !strings.Contains(h, want) {
			t.Errorf("aligned table HTML lacks %q:\n%s", want, h[strings.Index(h, "<tbody>"):])
		}
	}
}

func TestFigure(t *testing.T) {
	f := Graph("The graph", []byte(`<?xml version="1.0"?><!DOCTYPE svg><svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="5" height="5"/></svg>`),
		[]LegendEntry{{Color: "#c8e6c9", Label: "placeholder"}})
	h := f.HTML()
	for _, want := range []string{`data-gmw-name="the-graph"`, `data-gmw-action="zoom-in"`, `data-gmw-action="png"`,
		`data-gmw-action="svg"`, `class="gmw-swatch" style="background:#c8e6c9"`, `placeholder`, `tabindex="0"`, `max-height:640px`} {
		if !strings.Contains(h, want) {
			t.Errorf("figure HTML lacks %q", want)
		}
	}
	if strings.Contains(h, "<?xml") || strings.Contains(h, "DOCTYPE svg") {
		t.Errorf("figure HTML keeps the XML prolog: %s", h)
	}
	line, err := LineChart(plot.Chart{Title: "Loss", Series: []plot.Series{{Name: "train", X: []float64{1, 2, 3}, Y: []float64{3, 2, 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if h := line.HTML(); strings.Contains(h, `data-gmw-action="zoom-in"`) || !strings.Contains(h, `data-gmw-name="loss"`) || !strings.Contains(h, "<svg") {
		t.Errorf("line chart figure: want an SVG with downloads and no zoom")
	}
	if _, err := BarChart(plot.BarChart{Title: "empty"}); err == nil {
		t.Error("BarChart with no categories: want plot's error")
	}
	if h := (&Figure{Title: "broken", SVG: []byte("not svg")}).HTML(); !strings.Contains(h, `figure &#34;broken&#34; has no &lt;svg&gt; element`) {
		t.Errorf("broken figure: %s", h)
	}
	if got := fileName("  Task 2: best accuracy (TPE)!  ", "x"); got != "task-2-best-accuracy-tpe" {
		t.Errorf("fileName = %q", got)
	}
	if got := fileName("!!!", "figure"); got != "figure" {
		t.Errorf("fileName of punctuation = %q, want the fallback", got)
	}
}

func TestSource(t *testing.T) {
	h := (&Source{Name: "top.sv", Language: "sv", Text: "module top;\nendmodule\n"}).HTML()
	for _, want := range []string{`<span class="gmw-ln">1</span><span class="k">module</span> top;`, `<span class="gmw-ln">2</span>`,
		`2 lines, sv`, `max-height:480px`} {
		if !strings.Contains(h, want) {
			t.Errorf("source HTML lacks %q in %s", want, h)
		}
	}
	if strings.Contains(h, `<span class="gmw-ln">3</span>`) {
		t.Error("trailing newline made an empty third line")
	}
	if h := (&Source{Language: "cobol", Text: "x"}).HTML(); !strings.Contains(h, "unknown source language") {
		t.Errorf("unknown language: %s", h)
	}
}

func TestWriteHTML(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "page.html")
	if err := WriteHTML(p, "A & B", Text("hello <world>"), HTMLWidget("<b>bold</b>")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"<title>A &amp; B</title>", "<p>hello &lt;world&gt;</p>", "<b>bold</b>"} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the page (no temporary file left)", len(entries))
	}
	if err := WriteHTML(filepath.Join(dir, "page.txt"), "x"); err == nil || !strings.Contains(err.Error(), "must end in .html") {
		t.Errorf("WriteHTML(.txt) = %v", err)
	}
}

func TestShowOutsideNotebook(t *testing.T) {
	if Show(Text("x")) {
		t.Error("Show reported showing outside a notebook")
	}
}

func TestDedupeAssets(t *testing.T) {
	a, b := NewTable("a", "x"), NewTable("b", "y")
	page := string(Page("two tables", a, b))
	if n := strings.Count(page, "window.gomaseWidgets = {version"); n != 1 {
		t.Errorf("page holds the widget script %d times, want 1", n)
	}
	if strings.Index(page, "<style>") > strings.Index(page, "gmw-tablebox") {
		t.Error("the style sheet must come before the first widget")
	}
	if !strings.Contains(page, "<caption>a</caption>") || !strings.Contains(page, "<caption>b</caption>") {
		t.Error("a table was lost")
	}
	if got := DedupeAssets("<p>no widgets</p>"); got != "<p>no widgets</p>" {
		t.Errorf("DedupeAssets changed a page without widgets: %q", got)
	}
}
