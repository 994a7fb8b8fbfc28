package graphviz

import (
	"strings"
	"testing"
)

func TestDigraphDOTAndSVG(t *testing.T) {
	d := NewDigraph("g")
	d.Attrs["rankdir"] = "TB"
	if err := d.AddNode("a", map[string]string{"label": "in \"x\"\nshape [2,3]", "fillcolor": "#aaffaa", "style": "filled"}); err != nil {
		t.Fatal(err)
	}
	if err := d.AddNode("b", map[string]string{"label": "relu"}); err != nil {
		t.Fatal(err)
	}
	if err := d.AddEdge("a", "b", nil); err != nil {
		t.Fatal(err)
	}
	dot := d.String()
	for _, want := range []string{`"a" [fillcolor="#aaffaa", label="in \"x\"\nshape [2,3]", style="filled"];`, `"a" -> "b";`, `rankdir="TB"`} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %q:\n%s", want, dot)
		}
	}
	svg, err := RenderSVG(dot)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.Contains(s, "<svg") || !strings.Contains(s, "relu") || !strings.Contains(s, "#aaffaa") {
		t.Fatalf("SVG lacks the drawing:\n%.500s", s)
	}
}

func TestDigraphErrors(t *testing.T) {
	d := NewDigraph("g")
	if err := d.AddNode("a", nil); err != nil {
		t.Fatal(err)
	}
	if err := d.AddNode("a", nil); err == nil {
		t.Error("duplicate node accepted")
	}
	if err := d.AddEdge("a", "zz", nil); err == nil || !strings.Contains(err.Error(), "zz") {
		t.Errorf("edge to unknown node: got %v", err)
	}
	if _, err := RenderSVG("digraph { a -> "); err == nil {
		t.Error("malformed DOT rendered without error")
	}
}
