// Package plot draws the labs' static charts (loss curves, sweeps,
// best-so-far curves, trial scatters, bar charts) as SVG in-process with
// gonum.org/v1/plot, so they show offline in notebooks and in exported HTML
// reports.
package plot

import (
	"bytes"
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named line of (x, y) points, or, with Scatter, one named set
// of unconnected point markers. A series with an empty Name gets no legend
// entry.
type Series struct {
	Name string
	X, Y []float64
	// Scatter draws only a marker at every point, no line, so one chart can
	// mix lines and scatter series (trials as points, best-so-far as lines).
	Scatter bool
	// Color overrides the series colour; nil takes PaletteColor(i) for the
	// i-th series of the chart. Giving a scatter series and a line the same
	// colour ties them together visually.
	Color color.Color
	// Dashed draws the line dashed, so that a line drawn over another one
	// where they coincide leaves the first one visible. The i-th series of
	// a chart with more series than the palette's colours is dashed too
	// from the second round of colours on (PaletteDashed).
	Dashed bool
}

// Chart describes a line chart; its series may also be scatter series. The
// legend of its named series is drawn beside the data, right of it, so it
// never covers a line or a point.
// The y axis spans the data and 5% more above and below (data of a single
// y value first get a tenth of it, or 1 for 0, on either side); the x axis
// spans the data exactly, or 5% more on either side when the chart has
// markers (scatter series or Points), so that none is drawn on an axis.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Width and Height in centimetres (default 16 × 9).
	Width, Height float64
	// Points marks every data point of the line series too (sweeps with
	// few points). Scatter series always have markers.
	Points bool
	// IntegerX labels the x axis with whole numbers only (trial numbers,
	// steps, bit widths), at a step of 1, 2, 5, 10, 20, … units. A chart
	// whose x values are all whole numbers gets such an axis without it.
	IntegerX bool
	// LogLog draws both axes on a log₁₀ scale (a roofline); every value
	// must then be positive.
	LogLog bool
}

// palette holds ten readable, distinct line colours (the "category 10"
// scheme of matplotlib and D3).
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
	{0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
	{0x17, 0xbe, 0xcf, 0xff},
}

// PaletteColor returns the i-th colour of the charts' palette (it repeats
// after ten colours): the colour LineSVG gives the i-th series, or BarSVG
// the i-th group, when it sets none.
func PaletteColor(i int) color.Color {
	n := len(palette)
	return palette[(i%n+n)%n]
}

// PaletteDashed reports whether LineSVG dashes the i-th series' line: from
// the second round of the palette's colours on, so that no two lines of a
// chart of up to twenty look alike.
func PaletteDashed(i int) bool { return i >= len(palette) }

// dashes is the dash pattern of a dashed line.
var dashes = []vg.Length{vg.Points(5), vg.Points(3)}

// size returns the canvas size for width and height in centimetres, with
// the defaults for values ≤ 0.
func size(width, height, defHeight float64) (w, h vg.Length) {
	if width <= 0 {
		width = 16
	}
	if height <= 0 {
		height = defHeight
	}
	return vg.Length(width) * vg.Centimeter, vg.Length(height) * vg.Centimeter
}

// render draws p on a w × h canvas in format (as gonum names it: "svg") and
// returns the file's bytes; SVG text drawn by svgText gets its anchor.
func render(p *gplot.Plot, w, h vg.Length, format string) ([]byte, error) {
	return renderWith(p, w, h, format, (*gplot.Plot).Draw)
}

// renderWith is render with drawPlot drawing p on the whole canvas.
func renderWith(p *gplot.Plot, w, h vg.Length, format string, drawPlot func(*gplot.Plot, draw.Canvas)) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	drawPlot(p, draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	if format == "svg" {
		return anchorText(buf.Bytes()), nil
	}
	return buf.Bytes(), nil
}

// rangePad is the fraction of the data range left free on either side of
// the y axis, so no line runs along the frame or under the legend's edge,
// and of the x axis of a chart with markers, so no marker sits on an axis.
const rangePad = 0.05

// LineSVG renders the chart as SVG.
func LineSVG(c Chart) ([]byte, error) {
	p, w, h, err := c.build()
	if err != nil {
		return nil, err
	}
	return renderWith(p, w, h, "svg", drawLegendBeside)
}

// legendGap is the space between the data area and a legend beside it.
var legendGap = vg.Points(8)

// drawLegendBeside draws p with its legend right of the data area, at the
// top, instead of inside it: the data area is narrowed by the legend's
// width, and the title stays centred over the whole chart.
func drawLegendBeside(p *gplot.Plot, dc draw.Canvas) {
	legend := p.Legend
	width := legend.Rectangle(dc).Size().X
	if width == 0 { // no named series
		p.Draw(dc)
		return
	}
	title, top := p.Title.Text, vg.Length(0)
	if title != "" {
		descent := p.Title.TextStyle.FontExtents().Descent
		dc.FillText(p.Title.TextStyle, vg.Point{X: dc.Center().X, Y: dc.Max.Y + descent}, title)
		top = p.Title.TextStyle.Rectangle(title).Size().Y + p.Title.Padding
	}
	p.Title.Text = ""
	p.Legend = gplot.NewLegend()
	p.Legend.TextStyle = legend.TextStyle
	p.Draw(draw.Crop(dc, 0, -(width + legendGap), 0, -top))
	p.Title.Text, p.Legend = title, legend
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, dc.Max.X-dc.Min.X-width, 0, 0, -top))
}

// integerX reports whether the chart's x axis gets only whole-number ticks:
// with IntegerX, or when it has points and all their x values are whole.
func (c Chart) integerX() bool {
	if c.IntegerX {
		return true
	}
	n := 0
	for _, s := range c.Series {
		for _, x := range s.X {
			if !isInteger(x) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// build lays the chart out as a plot of size w × h.
func (c Chart) build() (p *gplot.Plot, w, h vg.Length, err error) {
	p = gplot.New()
	useSVGText(p)
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	p.Add(plotter.NewGrid())
	markers := false
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, 0, 0, fmt.Errorf("plot: series %q has %d x values and %d y values", s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j].X, pts[j].Y = s.X[j], s.Y[j]
		}
		col := s.Color
		if col == nil {
			col = PaletteColor(i)
		}
		var thumbs []gplot.Thumbnailer
		if !s.Scatter {
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("plot: series %q: %w", s.Name, err)
			}
			line.Color = col
			line.Width = vg.Points(1.5)
			if s.Dashed || PaletteDashed(i) {
				line.Dashes = dashes
			}
			p.Add(line)
			thumbs = append(thumbs, line)
		}
		if s.Scatter || c.Points {
			marks, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("plot: series %q: %w", s.Name, err)
			}
			marks.Color = col
			marks.Radius = vg.Points(2.5)
			if s.Scatter {
				// Filled dots read better than rings in a cloud of trials.
				marks.Shape = draw.CircleGlyph{}
				marks.Radius = vg.Points(2)
			}
			p.Add(marks)
			thumbs = append(thumbs, marks)
			markers = true
		}
		if s.Name != "" {
			p.Legend.Add(s.Name, thumbs...)
		}
	}
	if c.LogLog {
		for _, s := range c.Series {
			for j := range s.X {
				if !(s.X[j] > 0) || !(s.Y[j] > 0) {
					return nil, 0, 0, fmt.Errorf("plot: series %q has the point (%v, %v): a log-log chart takes positive values only", s.Name, s.X[j], s.Y[j])
				}
			}
		}
		p.X.Scale, p.Y.Scale = gplot.LogScale{}, gplot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}, gplot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = p.X.Min/1.5, p.X.Max*1.5
		p.Y.Min, p.Y.Max = p.Y.Min/1.5, p.Y.Max*1.5
	}
	intX := c.integerX() && !c.LogLog
	if intX {
		p.X.Tick.Marker = integerTicks{}
	}
	if p.X.Min <= p.X.Max && !c.LogLog { // the chart has data
		// Lines run from edge to edge; markers keep off the edges.
		xpad := 0.0
		if markers {
			xpad = rangePad
		}
		p.X.Min, p.X.Max = padRange(p.X.Min, p.X.Max, xpad, intX)
		p.Y.Min, p.Y.Max = padRange(p.Y.Min, p.Y.Max, rangePad, false)
	}
	w, h = size(c.Width, c.Height, 9)
	return p, w, h, nil
}
