package plot

import (
	"bytes"
	"math"
	"regexp"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The charts' text is laid out with the metrics of gonum's Liberation Serif
// font, but the SVG only names that font: a viewer without it draws the text
// in another one, up to a quarter wider (DejaVu, the usual fallback on Linux,
// is 12–28% wider). Text that starts where gonum computed it would then
// overshoot its end: a right-aligned tick label runs into its tick and a
// slanted category label ends up behind the bars. So the text of the charts
// is anchored in the SVG where it is aligned (text-anchor "middle" or "end"),
// which holds for any font, and the layout leaves room for text fontSlack
// times as wide as measured.

// fontSlack is how much wider than gonum measures it the layout lets text be.
const fontSlack = 1.25

// Markers that svgText puts before a line of text drawn on an SVG canvas, for
// anchorText to turn into the text-anchor of its <text> element; they are
// Unicode private-use characters, which svgText strips from the text itself.
const (
	anchorMiddle = '\uE000'
	anchorEnd    = '\uE001'
)

// svgText is the text handler of the charts: text.Plain, but measuring text
// fontSlack times as wide, and, on an SVG canvas, anchoring each line where
// it is aligned instead of placing its start by its measured width.
type svgText struct {
	text.Plain
	// drop moves the text down by this much from where it is drawn; the
	// layout must leave room for it.
	drop vg.Length
}

// newSVGText returns the charts' text handler.
func newSVGText() svgText { return svgText{Plain: text.Plain{Fonts: font.DefaultCache}} }

// Box implements text.Handler, with the width widened by fontSlack.
func (h svgText) Box(txt string, fnt font.Font) (width, height, depth vg.Length) {
	width, height, depth = h.Plain.Box(txt, fnt)
	return width * fontSlack, height, depth
}

// Draw implements text.Handler, drawing the text h.drop lower. On an SVG
// canvas, a line aligned at its left, centre or right is written from,
// around or up to the alignment point, with the marker of its anchor (and
// without any marker the text itself holds); other alignments, and other
// canvases, are drawn as text.Plain draws them.
func (h svgText) Draw(c vg.Canvas, txt string, sty text.Style, pt vg.Point) {
	pt.Y -= h.drop
	svg := isSVG(c)
	if svg {
		txt = strings.Map(func(r rune) rune {
			if r == anchorMiddle || r == anchorEnd {
				return -1
			}
			return r
		}, txt)
	}
	anchor := rune(0)
	switch sty.XAlign {
	case text.XCenter:
		anchor = anchorMiddle
	case text.XRight:
		anchor = anchorEnd
	}
	if !svg || (anchor == 0 && sty.XAlign != text.XLeft) {
		h.Plain.Draw(c, txt, sty, pt)
		return
	}
	if txt = strings.TrimRight(txt, "\n"); txt == "" {
		return
	}
	fnt := h.Fonts.Lookup(sty.Font, sty.Font.Size)
	c.SetColor(sty.Color)
	if sty.Rotation != 0 {
		c.Push()
		c.Rotate(sty.Rotation)
		defer c.Pop()
	}
	// As text.Plain: the point in the rotated frame, moved down to the
	// baseline of the first line.
	sin64, cos64 := math.Sincos(sty.Rotation)
	sin, cos := vg.Length(sin64), vg.Length(cos64)
	pt.X, pt.Y = pt.Y*sin+pt.X*cos, pt.Y*cos-pt.X*sin
	lines := h.Lines(txt)
	pt.Y += sty.Height(txt)*vg.Length(sty.YAlign) - fnt.Extents().Ascent
	for i, line := range lines {
		if anchor != 0 {
			line = string(anchor) + line
		}
		n := vg.Length(len(lines) - i)
		c.FillString(fnt, pt.Add(vg.Point{Y: n * sty.Font.Size}), line)
	}
}

// isSVG reports whether c draws on an SVG canvas.
func isSVG(c vg.Canvas) bool {
	for {
		switch cc := c.(type) {
		case *vgsvg.Canvas:
			return true
		case *draw.Canvas:
			c = cc.Canvas
		case draw.Canvas:
			c = cc.Canvas
		default:
			return false
		}
	}
}

// useSVGText makes p lay out and draw all its text with the charts' handler.
func useSVGText(p *gplot.Plot) {
	h := newSVGText()
	for _, sty := range []*text.Style{
		&p.Title.TextStyle, &p.Legend.TextStyle,
		&p.X.Label.TextStyle, &p.X.Tick.Label,
		&p.Y.Label.TextStyle, &p.Y.Tick.Label,
	} {
		sty.Handler = h
	}
}

// anchoredText matches the start of a <text> element whose text begins with
// an anchor marker.
var anchoredText = regexp.MustCompile("<text ([^>]*>)([\uE000\uE001])")

// anchorText gives every <text> element of svg that starts with an anchor
// marker the text-anchor it stands for, and removes the marker.
func anchorText(svg []byte) []byte {
	return anchoredText.ReplaceAllFunc(svg, func(m []byte) []byte {
		sub := anchoredText.FindSubmatch(m)
		anchor := "middle"
		if bytes.Equal(sub[2], []byte(string(anchorEnd))) {
			anchor = "end"
		}
		return append([]byte(`<text text-anchor="`+anchor+`" `), sub[1]...)
	})
}
