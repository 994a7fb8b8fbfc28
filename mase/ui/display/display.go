// Package display shows rich output (SVG, HTML, Markdown) inline when the
// program runs as a GoNB notebook cell, and is silent elsewhere (go run,
// go test, the CLI), where callers write files or text instead.
//
// Every display also carries a text/plain form for front-ends that cannot
// render rich output, such as `mase repl` (jupyter console): Markdown is
// shown as its source text; an SVG image or an HTML fragment is saved to a
// file and the text names it, e.g.
// "[SVG image: /tmp/gonb_1a2b3c4d/gomase-display/3f2a9c1b5e7d0a44.svg]".
// The files go to gomase-display/ in GoNB's temporary directory for the
// kernel ($GONB_TMP_DIR), which GoNB deletes when the kernel shuts down,
// and are named by a hash of the content, so showing the same output again
// reuses the file. Notebooks and HTML reports render the rich form.
//
// SVG, HTML and Markdown return once GoNB has published the output, so a
// display made just before a cell ends is not lost.
package display

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// InNotebook reports whether the program runs under the GoNB kernel.
func InNotebook() bool { return gonbui.IsNotebook }

// SVG shows an SVG image inline; it reports whether it was shown.
func SVG(svg string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	send(svgData(svg))
	return true
}

// HTML shows an HTML fragment inline; it reports whether it was shown.
func HTML(html string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	send(htmlData(html))
	return true
}

// Markdown shows Markdown inline; it reports whether it was shown.
func Markdown(md string) bool {
	if !gonbui.IsNotebook {
		return false
	}
	send(markdownData(md))
	return true
}

// NewID returns a unique element id for content updated in place.
func NewID() string { return "gomase-" + gonbui.UniqueID() }

// UpdateHTML shows html in the output block id, created on the first call
// and replaced in place afterwards; it does nothing outside a notebook.
// It has no text form: jupyter console does not show in-place updates.
func UpdateHTML(id, html string) {
	if gonbui.IsNotebook {
		gonbui.UpdateHTML(id, html)
	}
}

// bundle holds the representations of one display, by MIME type.
type bundle = map[protocol.MIMEType]any

// send displays data and waits until GoNB has published it: GoNB stops
// reading a cell's display pipe when the program exits, so a display sent
// just before the end could otherwise be lost or arrive after the cell's
// reply (jupyter console then prints it late or never).
func send(data bundle) {
	gonbui.SendData(&protocol.DisplayData{Data: data})
	gonbui.Sync()
}

// svgData is an SVG image as HTML (the way gonbui.DisplaySVG sends it,
// which notebooks exported to HTML keep) and as the path of a .svg file.
func svgData(svg string) bundle {
	return bundle{
		protocol.MIMETextHTML:  "<div>" + svg + "</div>",
		protocol.MIMETextPlain: saved("SVG image", "svg", svg),
	}
}

// htmlData is an HTML fragment and the path of a page holding it.
func htmlData(html string) bundle {
	page := "<!DOCTYPE html>\n<meta charset=\"utf-8\">\n" + html + "\n"
	return bundle{
		protocol.MIMETextHTML:  html,
		protocol.MIMETextPlain: saved("HTML", "html", page),
	}
}

// markdownData is Markdown, with its source as the text form.
func markdownData(md string) bundle {
	return bundle{
		protocol.MIMETextMarkdown: md,
		protocol.MIMETextPlain:    md,
	}
}

// dir is where SVG and HTML outputs are saved for text front-ends: in the
// kernel's temporary directory, or, without one, in the system's.
func dir() string {
	if d := os.Getenv(protocol.GONB_TMP_DIR_ENV); d != "" {
		return filepath.Join(d, "gomase-display")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("gomase-display-%d", os.Getuid()))
}

// saved writes content to a file in dir named by its hash and returns
// the text that names it: "[KIND: PATH]".
func saved(kind, ext, content string) string {
	path, err := save(ext, content)
	if err != nil {
		return fmt.Sprintf("[%s of %d bytes, not saved: %v]", kind, len(content), err)
	}
	return fmt.Sprintf("[%s: %s]", kind, path)
}

func save(ext, content string) (string, error) {
	d := dir()
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(content))
	path := filepath.Join(d, hex.EncodeToString(sum[:8])+"."+ext)
	if _, err := os.Stat(path); err == nil {
		return path, nil // saved before: same name, same content
	}
	// Write then rename, so a reader never sees half a file.
	f, err := os.CreateTemp(d, "partial-*")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, nil
}
