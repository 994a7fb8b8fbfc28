// Package plot draws the labs' static charts (loss curves, sweeps,
// best-so-far curves) as SVG in-process with gonum.org/v1/plot, so they
// show offline in notebooks and in exported HTML reports.
package plot

import (
	"bytes"
	"fmt"
	"image/color"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Series is one named line of (x, y) points.
type Series struct {
	Name string
	X, Y []float64
}

// Chart describes a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Width and Height in centimetres (default 16 × 9).
	Width, Height float64
	// Points marks every data point (sweeps with few points).
	Points bool
	// LegendBottom puts the legend at the bottom right instead of the top
	// right (curves that rise to the top, such as accuracy).
	LegendBottom bool
	// LegendLeft puts the legend on the left instead of the right.
	LegendLeft bool
}

// palette holds readable, distinct line colours.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
	{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
}

// LineSVG renders the chart as SVG.
func LineSVG(c Chart) ([]byte, error) {
	p := gplot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.Title, c.XLabel, c.YLabel
	p.Add(plotter.NewGrid())
	for i, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("plot: series %q has %d x values and %d y values", s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j].X, pts[j].Y = s.X[j], s.Y[j]
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plot: series %q: %w", s.Name, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		p.Add(line)
		var marks *plotter.Scatter
		if c.Points {
			if marks, err = plotter.NewScatter(pts); err != nil {
				return nil, fmt.Errorf("plot: series %q: %w", s.Name, err)
			}
			marks.Color = line.Color
			marks.Radius = vg.Points(2.5)
			p.Add(marks)
		}
		if s.Name != "" {
			if marks != nil {
				p.Legend.Add(s.Name, line, marks)
			} else {
				p.Legend.Add(s.Name, line)
			}
		}
	}
	// Leave 5% of the range free above and below, so no line runs along
	// the frame or under the legend's edge.
	if pad := (p.Y.Max - p.Y.Min) * 0.05; pad > 0 {
		p.Y.Min, p.Y.Max = p.Y.Min-pad, p.Y.Max+pad
	}
	p.Legend.Top = !c.LegendBottom
	p.Legend.Left = c.LegendLeft
	w, h := c.Width, c.Height
	if w <= 0 {
		w = 16
	}
	if h <= 0 {
		h = 9
	}
	wt, err := p.WriterTo(vg.Length(w)*vg.Centimeter, vg.Length(h)*vg.Centimeter, "svg")
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	return buf.Bytes(), nil
}
