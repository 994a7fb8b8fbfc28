package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// checkXML fails the test unless svg is well-formed XML with an <svg> root.
func checkXML(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element is %q, want svg", root)
	}
}

func TestLineSVG(t *testing.T) {
	svg, err := LineSVG(Chart{Title: "training loss", XLabel: "step", YLabel: "loss",
		Series: []Series{{Name: "train", X: []float64{1, 2, 3}, Y: []float64{0.7, 0.5, 0.3}}}})
	if err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg)
	s := string(svg)
	if !strings.Contains(s, "<svg") || !strings.Contains(s, "training loss") || !strings.Contains(s, "#1F77B4") {
		t.Errorf("SVG lacks title or line:\n%.400s", s)
	}
	if _, err := LineSVG(Chart{Series: []Series{{Name: "bad", X: []float64{1}, Y: nil}}}); err == nil {
		t.Error("mismatched series accepted")
	}
}

func TestLineSVGScatter(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	svg, err := LineSVG(Chart{Title: "trials <&> best", Series: []Series{
		{Name: "TPE & co", X: x, Y: []float64{0.5, 0.7, 0.6, 0.8}, Scatter: true},
		{X: x, Y: []float64{0.5, 0.7, 0.7, 0.8}, Color: PaletteColor(0)},
		{Name: "random", X: x, Y: []float64{0.4, 0.3, 0.65, 0.75}, Scatter: true, Color: PaletteColor(1)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg)
	s := string(svg)
	for _, want := range []string{"trials &lt;&amp;&gt; best", "TPE &amp; co", "random", "#1F77B4", "#FF7F0E"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// One line (the best-so-far series): a scatter series draws no path
	// with a stroke of its colour, only filled dots.
	if n := strings.Count(s, `stroke:#FF7F0E`); n != 0 {
		t.Errorf("scatter series drew %d stroked paths, want none", n)
	}
	if !strings.Contains(s, `fill:#FF7F0E`) {
		t.Error("scatter series drew no filled markers")
	}
	if _, err := LineSVG(Chart{Series: []Series{{Name: "nan", X: []float64{1}, Y: []float64{math.NaN()}, Scatter: true}}}); err == nil ||
		!strings.Contains(err.Error(), `"nan"`) {
		t.Errorf("NaN in a scatter series: err = %v, want an error naming the series", err)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{3: "3", 12345: "12345", 0.95: "0.95", 0.1 + 0.2: "0.3", 2.0 / 3: "0.6667"} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestPaletteColor(t *testing.T) {
	if PaletteColor(0) != PaletteColor(6) || PaletteColor(0) == PaletteColor(1) || PaletteColor(-1) != PaletteColor(5) || PaletteColor(math.MinInt) == nil {
		t.Error("palette does not cycle through six distinct colours")
	}
}

func TestBarSVG(t *testing.T) {
	cats := []string{"Linear", "LinearInteger", "LinearMinifloatDenorm", "LinearMinifloatIEEE", "LinearBlockFP", "LinearLog"}
	for _, c := range []BarChart{
		{Title: "layer types", XLabel: "layer type", YLabel: "layers", Categories: cats, ShowValues: true,
			Groups: []BarGroup{{Name: "TPE", Values: []float64{3, 1, 0, 2, 5, 1}}, {Name: "random & grid", Values: []float64{1, 2, 3, 4, 5, 6}}}},
		{Title: "one group", Categories: cats, Groups: []BarGroup{{Name: "TPE", Values: make([]float64, len(cats))}}, Width: 8, Height: 6},
		{Title: "short", Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "x", Values: []float64{0.5, 0.9}}, {Name: "y", Values: []float64{0.6, 0.95}}}},
	} {
		svg, err := BarSVG(c)
		if err != nil {
			t.Fatalf("%s: %v", c.Title, err)
		}
		checkXML(t, svg)
		s := string(svg)
		for _, cat := range c.Categories {
			if !strings.Contains(s, ">"+cat+"<") {
				t.Errorf("%s: SVG lacks category label %q", c.Title, cat)
			}
		}
		for _, g := range c.Groups {
			esc := strings.ReplaceAll(g.Name, "&", "&amp;")
			if has := strings.Contains(s, ">"+esc+"<"); has != (len(c.Groups) > 1) {
				t.Errorf("%s: legend entry %q present = %v with %d groups", c.Title, g.Name, has, len(c.Groups))
			}
		}
	}
}

func TestBarSVGLongLabelsSlant(t *testing.T) {
	// No title or y label: the tick labels are the only text that can turn.
	c := BarChart{Categories: []string{"LinearMinifloatDenorm", "LinearMinifloatIEEE", "LinearBlockMinifloat", "LinearInteger", "LinearLog"},
		Groups: []BarGroup{{Values: []float64{1, 2, 3, 4, 5}}}}
	svg, err := BarSVG(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "rotate(") {
		t.Error("long category labels are not rotated")
	}
	c.Categories = []string{"a", "b", "c", "d", "e"}
	if svg, _ = BarSVG(c); strings.Contains(string(svg), "rotate(") {
		t.Error("short category labels are rotated")
	}
}

func TestBarSVGErrors(t *testing.T) {
	for _, tc := range []struct {
		c    BarChart
		want string
	}{
		{BarChart{Title: "t", Groups: []BarGroup{{Name: "g"}}}, "no categories"},
		{BarChart{Title: "t", Categories: []string{"a"}}, "no groups"},
		{BarChart{Title: "t", Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "g", Values: []float64{1}}}}, `group "g" has 1 values for 2 categories`},
		{BarChart{Title: "t", Categories: []string{"a", "b"}, Groups: []BarGroup{{Name: "g", Values: []float64{1, -2}}}}, `category "b" has value -2`},
		{BarChart{Title: "t", Categories: []string{"a"}, Groups: []BarGroup{{Name: "g", Values: []float64{math.NaN()}}}}, "finite and ≥ 0"},
		{BarChart{Title: "t", Categories: []string{"a", "b"}, Groups: []BarGroup{{Values: []float64{1, 2}}}, Width: 0.5}, "too narrow"},
		{BarChart{Title: "t", Categories: []string{"a", "b"}, Groups: []BarGroup{{Values: []float64{1, 2}}}, Height: 0.3}, "too low"},
	} {
		_, err := BarSVG(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("BarSVG(%+v): err = %v, want one containing %q", tc.c, err, tc.want)
		}
	}
}
