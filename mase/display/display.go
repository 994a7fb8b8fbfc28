// Package display shows rich output (SVG, HTML, Markdown) inline when the
// program runs as a GoNB notebook cell, and is silent elsewhere (go run,
// go test, the CLI), where callers write files or text instead.
package display

import "github.com/janpfeifer/gonb/gonbui"

// InNotebook reports whether the program runs under the GoNB kernel.
func InNotebook() bool { return gonbui.IsNotebook }

// SVG shows an SVG image inline; it reports whether it was shown.
func SVG(svg string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	gonbui.DisplaySVG(svg)
	return true
}

// HTML shows an HTML fragment inline; it reports whether it was shown.
func HTML(html string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	gonbui.DisplayHTML(html)
	return true
}

// Markdown shows Markdown inline; it reports whether it was shown.
func Markdown(md string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	gonbui.DisplayMarkdown(md)
	return true
}

// NewID returns a unique element id for content updated in place.
func NewID() string { return "gomase-" + gonbui.UniqueID() }

// UpdateHTML shows html in the output block id, created on the first call
// and replaced in place afterwards; it does nothing outside a notebook.
func UpdateHTML(id, html string) {
	if gonbui.IsNotebook {
		gonbui.UpdateHTML(id, html)
	}
}
