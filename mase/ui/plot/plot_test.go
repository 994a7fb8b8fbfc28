package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg/draw"
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
	seen := map[any]bool{}
	for i := range 10 {
		seen[PaletteColor(i)] = true
	}
	if len(seen) != 10 || PaletteColor(0) != PaletteColor(10) || PaletteColor(-1) != PaletteColor(9) || PaletteColor(math.MinInt) == nil {
		t.Error("palette does not cycle through ten distinct colours")
	}
	if PaletteDashed(9) || !PaletteDashed(10) {
		t.Error("the second round of colours is not dashed")
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

// svgTextElem is one <text> element of an SVG drawn by render, with its
// anchor point in gonum's coordinates (points, y up from the bottom).
type svgTextElem struct {
	Text     string
	X, Y     float64 // the anchor point of the baseline
	Rotation float64 // degrees, counter-clockwise
	Anchor   string  // text-anchor: "" (start), "middle" or "end"
}

var (
	svgViewBox  = regexp.MustCompile(`viewBox="0 0 ([0-9.e+-]+) ([0-9.e+-]+)"`)
	svgTextElRe = regexp.MustCompile(`(?:<g transform="rotate\(([0-9.e+-]+)\)">\s*)?<text ([^>]*)>([^<]*)</text>`)
	svgAttrRe   = regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
)

// svgTexts returns the text elements of svg and its viewBox's width and
// height.
func svgTexts(t *testing.T, svg []byte) (texts []svgTextElem, w, h float64) {
	t.Helper()
	m := svgViewBox.FindSubmatch(svg)
	if m == nil {
		t.Fatal("SVG has no viewBox")
	}
	w, _ = strconv.ParseFloat(string(m[1]), 64)
	h, _ = strconv.ParseFloat(string(m[2]), 64)
	for _, m := range svgTextElRe.FindAllSubmatch(svg, -1) {
		e := svgTextElem{Text: html.UnescapeString(string(m[3]))}
		if len(m[1]) > 0 {
			e.Rotation, _ = strconv.ParseFloat(string(m[1]), 64)
		}
		var x, y float64
		for _, a := range svgAttrRe.FindAllSubmatch(m[2], -1) {
			switch v := string(a[2]); string(a[1]) {
			case "x":
				x, _ = strconv.ParseFloat(v, 64)
			case "y":
				y, _ = strconv.ParseFloat(v, 64)
			case "text-anchor":
				e.Anchor = v
			}
		}
		// vgsvg writes the point of the (rotated) frame as (x, -y) under
		// scale(1, -1); rotate it back into the canvas.
		sin, cos := math.Sincos(e.Rotation * math.Pi / 180)
		e.X, e.Y = x*cos+y*sin, x*sin-y*cos
		texts = append(texts, e)
	}
	return texts, w, h
}

// textByName returns the text elements of texts by their text.
func textByName(texts []svgTextElem) map[string]svgTextElem {
	m := map[string]svgTextElem{}
	for _, e := range texts {
		m[e.Text] = e
	}
	return m
}

func TestBarSVGSlantedLabelsVisible(t *testing.T) {
	cats := []string{"Linear", "LinearBinaryScaling", "LinearBlockFP", "LinearInteger", "LinearLog", "LinearMXInt8", "LinearMinifloatIEEE", "LinearTernary"}
	c := BarChart{Title: "Layer types in the best model", XLabel: "layer type", YLabel: "layers", Categories: cats, ShowValues: true,
		Groups: []BarGroup{{Name: "layers", Values: []float64{3, 1, 0, 2, 5, 1, 2, 4}}}}
	p, w, h, err := c.build()
	if err != nil {
		t.Fatal(err)
	}
	svg, err := BarSVG(c)
	if err != nil {
		t.Fatal(err)
	}
	texts, vw, vh := svgTexts(t, svg)
	if math.Abs(vw-w.Points()) > 0.01 || math.Abs(vh-h.Points()) > 0.01 {
		t.Fatalf("viewBox %v × %v, want %v × %v", vw, vh, w.Points(), h.Points())
	}
	dc := p.DataCanvas(draw.New(newMeasureCanvas(w, h)))
	axisY := dc.Min.Y.Points() // the bars stand on the axis line
	byName := textByName(texts)
	title, ok := byName["layer type"]
	if !ok {
		t.Fatal("SVG lacks the x axis label")
	}
	titleTop := title.Y + p.X.Label.TextStyle.FontExtents().Ascent.Points()
	plain := text.Plain{Fonts: font.DefaultCache}
	fnt := p.X.Tick.Label.Font
	size := fnt.Size.Points()
	desc := p.X.Tick.Label.FontExtents().Descent.Points()
	asc := p.X.Tick.Label.FontExtents().Ascent.Points()
	for i, cat := range cats {
		e, ok := byName[cat]
		if !ok {
			t.Fatalf("SVG lacks label %q", cat)
		}
		if e.Rotation != 45 || e.Anchor != "end" {
			t.Errorf("%q: rotation %v, text-anchor %q; want a 45° label anchored at its end", cat, e.Rotation, e.Anchor)
			continue
		}
		// The end of the baseline: just below and right of the tick, with
		// the top corner of the end (an ascent above the baseline, at
		// right angles to it) below the tick.
		tickX := dc.X(p.X.Norm(float64(i))).Points()
		tickBottom := axisY - p.X.Tick.Length.Points()
		if dx, gap := e.X-tickX, tickBottom-(e.Y+asc*math.Sqrt2/2); dx < 0 || dx > size || gap < 0 || gap > size/2 {
			t.Errorf("%q ends at (%.1f, %.1f), %.1f right of its tick, its top %.1f below the tick; want it just below the tick", cat, e.X, e.Y, dx, gap)
		}
		// Its start, in Liberation Serif and in a font a quarter wider
		// (the fallback fonts of browsers without it): inside the canvas,
		// above the axis label.
		wd, _, _ := plain.Box(cat, fnt)
		for _, slack := range []float64{1, 1.25} {
			l := wd.Points() * slack
			sx, sy := e.X-l*math.Sqrt2/2, e.Y-l*math.Sqrt2/2
			// The bottom left corner of the text lies a descent below
			// the baseline, at right angles to it.
			bx, by := sx+desc*math.Sqrt2/2, sy-desc*math.Sqrt2/2
			if sx < 0 || by < 0 || sy > vh || bx > vw {
				t.Errorf("%q (×%v wide) starts at (%.1f, %.1f), outside the %.1f × %.1f canvas", cat, slack, sx, by, vw, vh)
			}
			if by < titleTop {
				t.Errorf("%q (×%v wide) reaches down to %.1f, into the axis label whose top is at %.1f", cat, slack, by, titleTop)
			}
		}
	}
	if strings.ContainsAny(string(svg), "\uE000\uE001") {
		t.Error("SVG keeps text anchor markers")
	}
}

func TestSVGTextAnchors(t *testing.T) {
	// A marker in the text itself is dropped, not taken for an anchor.
	svg, err := LineSVG(Chart{Title: "a \uE001title", XLabel: "x", YLabel: "y",
		Series: []Series{{Name: "left", X: []float64{10, 20}, Y: []float64{0.25, 0.75}}}})
	if err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg)
	texts, _, _ := svgTexts(t, svg)
	byName := textByName(texts)
	for name, want := range map[string]string{"a title": "middle", "x": "middle", "y": "middle", "left": "", "0.50": "end", "14": "middle"} {
		if e, ok := byName[name]; !ok || e.Anchor != want {
			t.Errorf("text %q: present %v, text-anchor %q, want %q", name, ok, e.Anchor, want)
		}
	}
	if strings.ContainsAny(string(svg), "\uE000\uE001") {
		t.Error("SVG keeps text anchor markers")
	}
}

func TestIntegerTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string // the labels, space-separated
	}{
		{-0.25, 5.25, "0 1 2 3 4 5"},
		{0, 9, "0 2 4 6 8"},
		{-2, 39, "0 5 10 15 20 25 30 35"},
		{-2, 99, "0 20 40 60 80"},
		{1, 1234, "200 400 600 800 1000 1200"},
		{-0.5, 0.5, "0"},
		{-7, -3, "-7 -6 -5 -4 -3"},
	} {
		var labels []string
		for _, tk := range (integerTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Value < tc.lo || tk.Value > tc.hi || tk.Value != math.Trunc(tk.Value) {
				t.Errorf("[%v, %v]: tick at %v", tc.lo, tc.hi, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tc.want {
			t.Errorf("[%v, %v]: labels %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	// No whole number in the range: gonum's ticks.
	if ticks := (integerTicks{}).Ticks(0.2, 0.8); len(ticks) == 0 {
		t.Error("[0.2, 0.8]: no ticks")
	}
}

func TestLineSVGIntegerX(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	y := []float64{0.52, 0.61, 0.66, 0.7, 0.7, 0.73}
	for _, c := range []Chart{
		{Title: "auto", Series: []Series{{Name: "TPE", X: x, Y: y}}},
		{Title: "scatter", Series: []Series{{Name: "TPE", X: x, Y: y, Scatter: true}}},
		{Title: "forced", IntegerX: true, Series: []Series{{Name: "TPE", X: []float64{0, 2.5, 5}, Y: y[:3]}}},
	} {
		if !c.integerX() {
			t.Errorf("%s: x axis not integer", c.Title)
		}
		svg, err := LineSVG(c)
		if err != nil {
			t.Fatal(err)
		}
		labels := textByName(mustTexts(t, svg))
		for _, want := range []string{"0", "1", "2", "3", "4", "5"} {
			if _, ok := labels[want]; !ok {
				t.Errorf("%s: no x tick label %q", c.Title, want)
			}
		}
		for l := range labels {
			if strings.HasSuffix(l, ".5") || strings.HasSuffix(l, ".50") || strings.HasSuffix(l, ".00") {
				t.Errorf("%s: tick label %q on an integer axis", c.Title, l)
			}
		}
	}
	sweep := Chart{Series: []Series{{X: []float64{0.1, 0.5, 0.9}, Y: []float64{1, 2, 3}}}}
	if sweep.integerX() {
		t.Error("fractional x values give an integer axis")
	}
	svg, err := LineSVG(sweep)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := textByName(mustTexts(t, svg))["0.5"]; !ok {
		t.Error("fractional x axis lacks its tick label 0.5")
	}
}

func mustTexts(t *testing.T, svg []byte) []svgTextElem {
	t.Helper()
	texts, _, _ := svgTexts(t, svg)
	return texts
}

func TestChartRange(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	y := []float64{0.2, 0.7, 0.5, 0.9, 0.6, 0.8}
	for _, tc := range []struct {
		name     string
		c        Chart
		xlo, xhi float64 // the x range must be at least this wide
		exactX   bool    // and exactly this
		ylo, yhi float64 // the y range, to within 1e-9
	}{
		{"line", Chart{Series: []Series{{X: x, Y: y}}}, 0, 5, true, 0.165, 0.935},
		{"scatter", Chart{Series: []Series{{X: x, Y: y, Scatter: true}}}, -0.25, 5.25, true, 0.165, 0.935},
		{"points", Chart{Points: true, Series: []Series{{X: x, Y: y}}}, -0.25, 5.25, true, 0.165, 0.935},
		{"constant", Chart{Series: []Series{{X: x, Y: []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}}}}, 0, 5, true, 0.445, 0.555},
		{"zero", Chart{Series: []Series{{X: x, Y: make([]float64, 6)}}}, 0, 5, true, -1.1, 1.1},
		{"one point", Chart{Series: []Series{{X: []float64{3}, Y: []float64{2}, Scatter: true}}}, 2.45, 3.55, true, 1.78, 2.22},
	} {
		p, _, _, err := tc.c.build()
		if err != nil {
			t.Fatal(err)
		}
		if tc.exactX && (math.Abs(p.X.Min-tc.xlo) > 1e-9 || math.Abs(p.X.Max-tc.xhi) > 1e-9) {
			t.Errorf("%s: x range [%v, %v], want [%v, %v]", tc.name, p.X.Min, p.X.Max, tc.xlo, tc.xhi)
		}
		if math.Abs(p.Y.Min-tc.ylo) > 1e-9 || math.Abs(p.Y.Max-tc.yhi) > 1e-9 {
			t.Errorf("%s: y range [%v, %v], want [%v, %v]", tc.name, p.Y.Min, p.Y.Max, tc.ylo, tc.yhi)
		}
	}
}

func TestLogLogChart(t *testing.T) {
	c := Chart{Title: "roofline", LogLog: true, Series: []Series{
		{Name: "roof", X: []float64{0.01, 10, 1000}, Y: []float64{0.1, 100, 100}},
		{Name: "nodes", X: []float64{0.5, 40}, Y: []float64{1, 60}, Scatter: true},
	}}
	svg, err := LineSVG(c)
	if err != nil || len(svg) == 0 {
		t.Fatalf("log-log chart: %v", err)
	}
	c.Series[1].Y[0] = 0
	if _, err := LineSVG(c); err == nil || !strings.Contains(err.Error(), "positive values only") {
		t.Errorf("a zero on a log axis: %v", err)
	}
}

var svgPathRe = regexp.MustCompile(`<path d="([^"]*)" style="([^"]*)"`)

// strokedPoints returns the points of every path of svg stroked in col
// ("#1F77B4") with at least minPoints points, in canvas coordinates.
func strokedPoints(svg []byte, col string, minPoints int) [][2]float64 {
	var pts [][2]float64
	num := regexp.MustCompile(`[ML]\s*(-?[0-9.]+)[ ,](-?[0-9.]+)`)
	for _, m := range svgPathRe.FindAllSubmatch(svg, -1) {
		if !strings.Contains(string(m[2]), "stroke:"+col) {
			continue
		}
		ms := num.FindAllSubmatch(m[1], -1)
		if len(ms) < minPoints {
			continue
		}
		for _, p := range ms {
			x, _ := strconv.ParseFloat(string(p[1]), 64)
			y, _ := strconv.ParseFloat(string(p[2]), 64)
			pts = append(pts, [2]float64{x, y})
		}
	}
	return pts
}

// TestLegendBesideTheData: the legend's entries start right of every point
// of every line, even when the lines end in the top right corner, where a
// legend inside the data area would sit; dashed lines are dashed.
func TestLegendBesideTheData(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	var series []Series
	for i := range 12 {
		y := make([]float64, len(x))
		for j := range x {
			y[j] = 0.5 + 0.1*float64(j) + 0.001*float64(i)
		}
		series = append(series, Series{Name: fmt.Sprintf("format %d", i), X: x, Y: y})
	}
	svg, err := LineSVG(Chart{Title: "twelve curves", XLabel: "trial", YLabel: "accuracy", Series: series})
	if err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg)
	texts, w, _ := svgTexts(t, svg)
	byName := textByName(texts)
	right := 0.0
	for i := range series {
		c := PaletteColor(i).(color.RGBA)
		pts := strokedPoints(svg, fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B), len(x))
		if len(pts) == 0 {
			t.Fatalf("series %d drew no line", i)
		}
		for _, p := range pts {
			right = math.Max(right, p[0])
		}
	}
	for _, s := range series {
		e, ok := byName[s.Name]
		if !ok {
			t.Fatalf("legend entry %q missing", s.Name)
		}
		if e.X <= right || e.X >= w {
			t.Errorf("legend entry %q starts at x = %.1f; the lines reach %.1f and the canvas ends at %.1f", s.Name, e.X, right, w)
		}
	}
	if n := strings.Count(string(svg), "stroke-dasharray"); n < 2 {
		t.Errorf("%d dashed paths, want the two lines past the palette's ten colours (and their legend thumbnails)", n)
	}
}
