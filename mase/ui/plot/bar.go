package plot

import (
	"fmt"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// BarGroup is one named set of bars: Values[i] is the bar height for
// category i of the chart.
type BarGroup struct {
	Name   string
	Values []float64
}

// BarChart describes a grouped vertical bar chart: for every category one
// bar per group, side by side, in the groups' order.
type BarChart struct {
	Title, XLabel, YLabel string
	// Categories label the x axis, one per bar cluster, left to right.
	// Labels too long to sit side by side are drawn slanted at 45°, or
	// upright when there are too many to slant.
	Categories []string
	// Groups hold one value per category each; values must be finite and
	// ≥ 0. With more than one group the chart has a legend of the names.
	Groups []BarGroup
	// Width and Height in centimetres (default 16 × 9; when the category
	// labels are slanted, the default height grows by the room they take).
	Width, Height float64
	// ShowValues writes every bar's value above it (counts, say).
	ShowValues bool
}

// validate reports the first problem with the chart's data, and returns the
// largest value.
func (b BarChart) validate() (float64, error) {
	if len(b.Categories) == 0 {
		return 0, fmt.Errorf("plot: bar chart %q has no categories; give Categories one label per bar cluster", b.Title)
	}
	if len(b.Groups) == 0 {
		return 0, fmt.Errorf("plot: bar chart %q has no groups; give Groups at least one BarGroup with one value per category", b.Title)
	}
	var top float64
	for _, g := range b.Groups {
		if len(g.Values) != len(b.Categories) {
			return 0, fmt.Errorf("plot: bar chart %q: group %q has %d values for %d categories; give one value per category",
				b.Title, g.Name, len(g.Values), len(b.Categories))
		}
		for i, v := range g.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return 0, fmt.Errorf("plot: bar chart %q: group %q, category %q has value %v; bar values must be finite and ≥ 0",
					b.Title, g.Name, b.Categories[i], v)
			}
			top = max(top, v)
		}
	}
	return top, nil
}

// wholeValues reports whether every bar's value is a whole number.
func (b BarChart) wholeValues() bool {
	for _, g := range b.Groups {
		for _, v := range g.Values {
			if !isInteger(v) {
				return false
			}
		}
	}
	return true
}

// BarSVG renders the bar chart as SVG.
func BarSVG(b BarChart) ([]byte, error) {
	p, w, h, err := b.build()
	if err != nil {
		return nil, err
	}
	return render(p, w, h, "svg")
}

// build lays the bar chart out as a plot of size w × h.
func (b BarChart) build() (p *gplot.Plot, w, h vg.Length, err error) {
	top, err := b.validate()
	if err != nil {
		return nil, 0, 0, err
	}
	n, groups := len(b.Categories), len(b.Groups)

	p = gplot.New()
	useSVGText(p)
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = b.Title, b.XLabel, b.YLabel
	grid := plotter.NewGrid()
	grid.Vertical.Color = nil // a vertical grid would cut through the bars
	p.Add(grid)
	ticks := make([]gplot.Tick, n)
	for i, c := range b.Categories {
		ticks[i] = gplot.Tick{Value: float64(i), Label: c}
	}
	p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	p.X.Padding = 0 // the bars stand on the axis line
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min, p.Y.Max = 0, top
	if top == 0 {
		p.Y.Max = 1
	}
	if b.wholeValues() {
		p.Y.Tick.Marker = integerTicks{} // counts: no 2.50 layers
	}
	// Lay out with horizontal labels first; slant them if the widest does
	// not fit in a category's slot.
	w, h = size(b.Width, b.Height, 9)
	dc := p.DataCanvas(draw.New(newMeasureCanvas(w, h)))
	slot := dc.Size().X / vg.Length(n)
	lsty := &p.X.Tick.Label
	widest := vg.Length(0)
	for _, c := range b.Categories {
		widest = max(widest, lsty.Width(c))
	}
	if widest+lsty.Width("MM") > slot {
		flat := tickLabelsHeight(*lsty, b.Categories)
		// Slant them at 45°, or stand them upright when the slots are too
		// narrow for slanted lines not to touch. A label ends at its
		// anchor, below its tick (svgText anchors it there in the SVG,
		// whatever font the viewer draws it in): a slanted one hangs from
		// the top corner of its end, so that no part of it rises into the
		// tick; an upright one is centred under the tick.
		lsty.Rotation, lsty.XAlign, lsty.YAlign = math.Pi/4, draw.XRight, draw.YTop
		if slot*math.Sqrt2/2 < lsty.Height("Xg")*1.1 {
			lsty.Rotation, lsty.YAlign = math.Pi/2, draw.YCenter
		}
		// gonum puts the anchor a font descent above the top of the
		// labels' band, into the ticks: drop the labels by that much, and
		// the axis label with them.
		drop := lsty.FontExtents().Descent
		hdlr := newSVGText()
		hdlr.drop = drop
		lsty.Handler = hdlr
		p.X.Label.Padding += drop
		// Short tick marks show which bar a label names.
		p.X.Tick.Length = vg.Points(5)
		if b.Height <= 0 {
			h += tickLabelsHeight(*lsty, b.Categories) - flat + drop + p.X.Tick.Length
		}
		dc = p.DataCanvas(draw.New(newMeasureCanvas(w, h)))
		slot = dc.Size().X / vg.Length(n)
		// The first label runs left, under the y axis; pad the axis if it
		// would run off the canvas.
		reach := -lsty.Rectangle(b.Categories[0]).Min.X
		if room := dc.Min.X + slot/2 - vg.Points(2); reach > room {
			p.Y.Padding += reach - room
			dc = p.DataCanvas(draw.New(newMeasureCanvas(w, h)))
			slot = dc.Size().X / vg.Length(n)
		}
	} else {
		p.X.Tick.Length = 0
	}

	if !(slot > 0) { // NaN too: gonum pads a canvas with no room into NaN
		return nil, 0, 0, fmt.Errorf("plot: bar chart %q is too narrow for %d categories and its labels; make Width larger", b.Title, n)
	}
	if !(dc.Size().Y > 0) {
		return nil, 0, 0, fmt.Errorf("plot: bar chart %q is too low for its labels; make Height larger (or 0 for the default)", b.Title)
	}
	barW := slot * 0.8 / vg.Length(groups)
	var vsty text.Style
	if b.ShowValues {
		vsty = p.X.Tick.Label
		vsty.Rotation, vsty.XAlign, vsty.YAlign = 0, draw.XCenter, draw.YBottom
		vsty.Handler = newSVGText() // not the tick labels' dropping one
	}
	for gi, g := range b.Groups {
		bars, err := plotter.NewBarChart(plotter.Values(g.Values), barW)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("plot: bar chart %q: group %q: %w", b.Title, g.Name, err)
		}
		bars.Color = PaletteColor(gi)
		bars.LineStyle.Width = 0
		bars.Offset = (vg.Length(gi) - vg.Length(groups-1)/2) * barW
		p.Add(bars)
		if groups > 1 {
			p.Legend.Add(g.Name, bars)
		}
		if b.ShowValues {
			labels := &plotter.Labels{Offset: vg.Point{X: bars.Offset, Y: vg.Points(1)}}
			for i, v := range g.Values {
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(i), Y: v})
				labels.Labels = append(labels.Labels, formatValue(v))
				labels.TextStyle = append(labels.TextStyle, vsty)
			}
			p.Add(labels)
		}
	}

	// Head room: the tallest bar stays below the legend (drawn at the top
	// right) and leaves space for its value label.
	var room vg.Length
	if groups > 1 {
		p.Legend.Top = true
		room = p.Legend.Rectangle(dc).Size().Y + vg.Points(4)
	}
	if b.ShowValues {
		room += vsty.Height("0") + vg.Points(3)
	}
	if dh := dc.Size().Y; room > 0 && dh > 0 {
		frac := min(float64(room/dh), 0.5) // never squash the bars below half height
		p.Y.Max /= 1 - frac
	} else {
		p.Y.Max *= 1.05
	}
	return p, w, h, nil
}

// formatValue writes a bar's value: whole numbers in full, others with four
// significant digits.
func formatValue(v float64) string {
	if v == math.Trunc(v) && v < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// tickLabelsHeight returns the height the labels take when drawn in sty.
func tickLabelsHeight(sty text.Style, labels []string) vg.Length {
	var h vg.Length
	for _, l := range labels {
		r := sty.Rectangle(l)
		h = max(h, r.Max.Y-r.Min.Y)
	}
	return h
}

// newMeasureCanvas returns a canvas of the given size for laying a plot
// out before drawing it; nothing is drawn on it.
func newMeasureCanvas(w, h vg.Length) vg.CanvasSizer { return vgsvg.New(w, h) }
