package widget

import (
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/gomase/gomase/mase/ui/plot"
	"github.com/gomase/gomase/rtl/vcd"
)

// LegendEntry is one colour of a legend and what it stands for.
type LegendEntry struct {
	// Color is a CSS colour ("#bbdefb").
	Color string
	// Label says what the colour marks.
	Label string
}

// Figure is an SVG image with a title bar holding PNG and SVG download
// buttons. Zoomable figures (graphs) also get zoom buttons, drag-to-pan,
// and wheel zoom once clicked into; their view scrolls within MaxHeight.
type Figure struct {
	// Title heads the figure and names downloaded files.
	Title string
	// SVG is the image, a complete <svg> element (an XML prolog or DOCTYPE
	// before it is dropped).
	SVG []byte
	// Legend, if any, is drawn under the title.
	Legend []LegendEntry
	// Zoomable adds zoom and pan.
	Zoomable bool
	// MaxHeight bounds the view's height in CSS pixels (0: 640 for
	// zoomable figures, unbounded otherwise).
	MaxHeight int
}

var svgStartRE = regexp.MustCompile(`(?is)<svg[\s>]`)

// HTML returns the figure with its tool bar, or an error message in its
// place when SVG holds no <svg> element.
func (f *Figure) HTML() string {
	svg := string(f.SVG)
	loc := svgStartRE.FindStringIndex(svg)
	if loc == nil {
		return assets + `<div class="gmw"><pre>` + html.EscapeString(fmt.Sprintf("widget: figure %q has no <svg> element", f.Title)) + `</pre></div>`
	}
	svg = svg[loc[0]:]
	var b strings.Builder
	b.WriteString(assets)
	class := "gmw gmw-figure"
	if f.Zoomable {
		class += " gmw-zoom"
	}
	fmt.Fprintf(&b, `<div class="%s" data-gmw-name="%s">`, class, html.EscapeString(fileName(f.Title, "figure")))
	b.WriteString(`<div class="gmw-bar">`)
	fmt.Fprintf(&b, `<span class="gmw-title">%s</span>`, html.EscapeString(f.Title))
	if f.Zoomable {
		b.WriteString(`<button class="gmw-btn" data-gmw-action="zoom-out" title="zoom out">&minus;</button>` +
			`<span class="gmw-zoomlevel">100%</span>` +
			`<button class="gmw-btn" data-gmw-action="zoom-in" title="zoom in">+</button>` +
			`<button class="gmw-btn" data-gmw-action="fit" title="fit the whole image in the view">fit</button>` +
			`<button class="gmw-btn" data-gmw-action="reset" title="natural size">1:1</button>`)
	}
	b.WriteString(`<button class="gmw-btn" data-gmw-action="svg" title="download as SVG">SVG</button>` +
		`<button class="gmw-btn" data-gmw-action="png" title="download as PNG">PNG</button></div>`)
	if len(f.Legend) > 0 {
		b.WriteString(`<div class="gmw-legend">`)
		for _, e := range f.Legend {
			fmt.Fprintf(&b, `<span class="gmw-key"><span class="gmw-swatch" style="background:%s"></span>%s</span>`,
				html.EscapeString(e.Color), html.EscapeString(e.Label))
		}
		b.WriteString(`</div>`)
	}
	style := ""
	maxH := f.MaxHeight
	if maxH == 0 && f.Zoomable {
		maxH = 640
	}
	if maxH > 0 {
		style = fmt.Sprintf(` style="max-height:%dpx"`, maxH)
	}
	tab := ""
	if f.Zoomable {
		tab = ` tabindex="0"`
	}
	fmt.Fprintf(&b, `<div class="gmw-view"%s%s>%s</div>`, style, tab, svg)
	if f.Zoomable {
		b.WriteString(`<div class="gmw-hint">Drag to pan; click into the drawing, then scroll to zoom.</div>`)
	}
	b.WriteString(`</div>`)
	return b.String()
}

// LineChart draws a line or scatter chart (see plot.Chart) as a Figure.
func LineChart(c plot.Chart) (*Figure, error) {
	svg, err := plot.LineSVG(c)
	if err != nil {
		return nil, err
	}
	return &Figure{Title: c.Title, SVG: svg}, nil
}

// BarChart draws a grouped bar chart (see plot.BarChart) as a Figure.
func BarChart(c plot.BarChart) (*Figure, error) {
	svg, err := plot.BarSVG(c)
	if err != nil {
		return nil, err
	}
	return &Figure{Title: c.Title, SVG: svg}, nil
}

// Waveform draws signals of a VCD dump (see vcd.SVG) as a zoomable Figure.
func Waveform(title string, d *vcd.Dump, opts vcd.Options) (*Figure, error) {
	svg, err := vcd.SVG(d, opts)
	if err != nil {
		return nil, err
	}
	return &Figure{Title: title, SVG: svg, Zoomable: true}, nil
}

// Graph shows a drawn graph (Graphviz SVG) as a zoomable Figure with a
// legend of its node colours.
func Graph(title string, svg []byte, legend []LegendEntry) *Figure {
	return &Figure{Title: title, SVG: svg, Legend: legend, Zoomable: true}
}
