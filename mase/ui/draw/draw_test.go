package draw_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase"
	"github.com/gomase/gomase/mase/models"
	"github.com/gomase/gomase/mase/ui/draw"
)

func TestWidgetAndLegend(t *testing.T) {
	m, err := models.NewMLP(0)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := mase.NewMaseGraph(m, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := draw.Widget(mg)
	if err != nil {
		t.Fatal(err)
	}
	h := w.HTML()
	n := len(mg.Graph.Nodes())
	for _, want := range []string{"MaseGraph: " + strconv.Itoa(n) + " nodes", "call_module", "#bbdefb", `data-gmw-action="zoom-in"`, "<svg"} {
		if !strings.Contains(h, want) {
			t.Errorf("graph widget lacks %q", want)
		}
	}
	legend := draw.Legend()
	if len(legend) != 6 || legend[0].Label != "placeholder (input)" || legend[5].Color != "#ffccbc" {
		t.Errorf("Legend = %+v", legend)
	}
	// Outside a notebook Draw needs a file; with one it writes the SVG.
	if err := draw.Graph(mg, ""); err == nil || !strings.Contains(err.Error(), "not in a notebook") {
		t.Errorf("Draw(\"\") outside a notebook = %v", err)
	}
	dir := t.TempDir()
	if err := draw.Graph(mg, filepath.Join(dir, "g.svg")); err != nil {
		t.Error(err)
	}
	if err := draw.Graph(mg, filepath.Join(dir, "g.html")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "g.html"))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(page); !strings.Contains(s, "<!DOCTYPE html>") || !strings.Contains(s, `data-gmw-action="zoom-in"`) || !strings.Contains(s, "call_method") {
		t.Errorf("g.html is not a page with the zoomable graph and its legend")
	}
	if err := draw.Graph(mg, filepath.Join(dir, "g.png")); err == nil || !strings.Contains(err.Error(), "allowed: .svg, .html, .dot") {
		t.Errorf("Graph(.png) = %v, want the allowed types named", err)
	}
}
