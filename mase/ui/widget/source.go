package widget

import (
	"fmt"
	"html"
	"strings"
)

// Source is a source file shown with syntax highlighting and line numbers
// (see Highlight for the languages).
type Source struct {
	// Name heads the listing (a file name, say).
	Name string
	// Language is a name Highlight accepts: go, systemverilog (sv,
	// verilog) or text.
	Language string
	// Text is the source.
	Text string
	// MaxHeight bounds the listing's height in CSS pixels; it scrolls
	// (0: 480).
	MaxHeight int
}

// HTML returns the listing, or an error message in its place for an
// unknown language.
func (s *Source) HTML() string {
	lines, err := highlightLines(s.Language, strings.TrimRight(s.Text, "\n"))
	if err != nil {
		return assets + `<div class="gmw"><pre>` + html.EscapeString(err.Error()) + `</pre></div>`
	}
	maxH := s.MaxHeight
	if maxH <= 0 {
		maxH = 480
	}
	var b strings.Builder
	b.WriteString(assets)
	b.WriteString(`<div class="gmw gmw-source">`)
	if s.Name != "" {
		fmt.Fprintf(&b, `<div class="gmw-bar"><span class="gmw-title">%s</span><span class="gmw-hint">%d lines, %s</span></div>`,
			html.EscapeString(s.Name), len(lines), html.EscapeString(s.Language))
	}
	fmt.Fprintf(&b, `<pre class="gmw-src" style="max-height:%dpx">`, maxH)
	for i, l := range lines {
		fmt.Fprintf(&b, `<span class="gmw-ln">%d</span>%s`+"\n", i+1, l)
	}
	b.WriteString("</pre></div>")
	return b.String()
}
