// Package report writes what a lab run shows: a self-contained, offline HTML
// report of each executed notebook, the index page of a run, and the checks
// in headless Chromium that every page loads without the network and that
// its SVGs draw.
package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"mime"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
	"github.com/gomase/gomase/mase/limits"
	"github.com/gomase/gomase/mase/ui/widget"
)

// Info is what a report says about the run besides the notebook.
type Info struct {
	// Name is the notebook's file name, e.g. "lab1.ipynb".
	Name string
	// Err is the run's failure, nil when it succeeded.
	Err error
	// FailedCell is the 1-based index of the failing cell, 0 if none.
	FailedCell int
	// Duration is how long the run took (0: not shown).
	Duration time.Duration
	// Scale and Backend are the notebook's scale and GoMLX backend ("":
	// not shown).
	Scale   scale.Scale
	Backend string
	// Generated is when the report was written (zero: not shown).
	Generated time.Time
	// BaseDir resolves relative image paths in markdown (the directory of
	// the source notebook); images are embedded as data URLs.
	BaseDir string
}

// Write renders nb as a self-contained HTML file at path, written whole
// (atomicfile): a failed write (a full disk) leaves the previous report,
// if any, and no temporary file.
func Write(path string, nb *notebook.Notebook, info Info) error {
	var buf bytes.Buffer
	if err := RenderHTML(&buf, nb, info); err != nil {
		return err
	}
	if err := atomicfile.Write(atomicfile.File{Path: path, Data: buf.Bytes()}); err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}

// RenderHTML writes nb as one self-contained HTML page: styles inline,
// images and SVG embedded, no script or stylesheet from the network.
// Markdown is rendered with goldmark (GitHub flavour), Go cells are
// highlighted, outputs are shown as Jupyter would (HTML, SVG, PNG/JPEG/GIF,
// markdown, JSON, text, streams, errors with ANSI codes stripped). Remote
// resources inside outputs (e.g. a chart library from a CDN) are replaced
// by a note; the finished page is checked with CheckOffline.
func RenderHTML(w io.Writer, nb *notebook.Notebook, info Info) error {
	r := &reportRenderer{info: info, ids: newHeadingIDs()}
	r.md = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
	)
	page := pageData{
		Title:    notebookTitle(nb, info.Name),
		Name:     info.Name,
		OK:       info.Err == nil,
		Scale:    info.Scale.Describe(),
		Quick:    info.Scale == scale.Quick,
		Backend:  info.Backend,
		Failed:   info.FailedCell,
		Kernel:   nb.KernelName(),
		Duration: formatDuration(info.Duration),
	}
	if !info.Generated.IsZero() {
		page.Generated = info.Generated.Format("2006-01-02 15:04:05 MST")
	}
	if info.Err != nil {
		page.Error = notebook.StripANSI(info.Err.Error())
	}
	stamp, err := json.Marshal(pageResult{
		Notebook: info.Name, Title: page.Title, OK: info.Err == nil, Error: firstLine(page.Error),
		Seconds: info.Duration.Seconds(), Scale: string(info.Scale), Backend: info.Backend, Generated: info.Generated,
	})
	if err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	page.Result = string(stamp)
	for i := range nb.Cells {
		page.Cells = append(page.Cells, template.HTML(r.cell(&nb.Cells[i], i+1)))
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, page); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	doc := widget.DedupeAssets(buf.String()) // one copy of the widgets' style and script
	if err := CheckOffline(doc); err != nil {
		return fmt.Errorf("report is not self-contained: %w", err)
	}
	_, err = io.WriteString(w, doc)
	return err
}

type pageData struct {
	Title, Name, Kernel, Duration, Generated, Error, Scale, Backend string
	OK, Quick                                                       bool
	Failed                                                          int
	Cells                                                           []template.HTML
	// Result is the pageResult JSON of the page's result meta element.
	Result string
}

type reportRenderer struct {
	info Info
	md   goldmark.Markdown
	ids  *headingIDs
}

func (r *reportRenderer) cell(c *notebook.Cell, index int) string {
	var b strings.Builder
	switch c.CellType {
	case "markdown":
		fmt.Fprintf(&b, `<section class="cell md" id="cell-%d">`, index)
		b.WriteString(r.markdown(string(c.Source), c.Attachments))
		b.WriteString("</section>\n")
	case "raw":
		fmt.Fprintf(&b, `<section class="cell raw" id="cell-%d"><pre>%s</pre></section>`+"\n", index, html.EscapeString(string(c.Source)))
	default:
		class := "cell code"
		if index == r.info.FailedCell {
			class += " failed"
		}
		fmt.Fprintf(&b, `<section class="%s" id="cell-%d">`, class, index)
		prompt := "In [ ]:"
		if c.Execution != nil {
			prompt = fmt.Sprintf("In [%d]:", *c.Execution)
		}
		b.WriteString(`<div class="input"><div class="prompt">` + html.EscapeString(prompt))
		if d := c.Duration(); d > 0 {
			b.WriteString(`<span class="time">` + html.EscapeString(formatDuration(d)) + `</span>`)
		}
		b.WriteString(`</div><pre class="src">` + highlightCell(string(c.Source)) + `</pre></div>`)
		if len(c.Outputs) > 0 {
			b.WriteString(`<div class="outputs">`)
			for _, o := range mergeStreams(c.Outputs) {
				b.WriteString(r.output(o))
			}
			b.WriteString(`</div>`)
		}
		b.WriteString("</section>\n")
	}
	return b.String()
}

// mergeStreams joins consecutive stream outputs of the same name.
func mergeStreams(outs []notebook.Output) []notebook.Output {
	var res []notebook.Output
	for _, o := range outs {
		if n := len(res); n > 0 && o.OutputType == "stream" && res[n-1].OutputType == "stream" && res[n-1].Name == o.Name {
			res[n-1].Text += o.Text
			continue
		}
		res = append(res, o)
	}
	return res
}

// mimeOrder is the preference among a display's representations.
var mimeOrder = []string{
	"text/html", "image/svg+xml", "image/png", "image/jpeg", "image/gif",
	"text/markdown", "text/latex", "application/json", "text/plain",
}

func (r *reportRenderer) output(o notebook.Output) string {
	switch o.OutputType {
	case "stream":
		class := "stream"
		if o.Name == "stderr" {
			class += " stderr"
		}
		return `<pre class="` + class + `">` + html.EscapeString(notebook.PlainText((string(o.Text)))) + "</pre>"
	case "error":
		tb := notebook.StripANSI(strings.Join(o.Traceback, "\n"))
		head := notebook.StripANSI(o.EName + ": " + o.EValue)
		body := "<strong>" + html.EscapeString(head) + "</strong>"
		if strings.TrimSpace(tb) != "" && strings.TrimSpace(tb) != strings.TrimSpace(notebook.StripANSI(o.EValue)) {
			body += "\n" + html.EscapeString(tb)
		}
		return `<pre class="error">` + body + "</pre>"
	case "display_data", "execute_result":
		for _, m := range mimeOrder {
			v, ok := o.Data.Text(m)
			if !ok {
				continue
			}
			return `<div class="display">` + r.display(m, v, o.Data[m]) + "</div>"
		}
		if len(o.Data) > 0 {
			var kinds []string
			for k := range o.Data {
				kinds = append(kinds, k)
			}
			return `<pre class="note">[output of type ` + html.EscapeString(strings.Join(kinds, ", ")) + ` cannot be shown in a static report]</pre>`
		}
	}
	return ""
}

var xmlPrologRE = regexp.MustCompile(`(?s)^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?`)

func (r *reportRenderer) display(mimeType, v string, raw json.RawMessage) string {
	switch mimeType {
	case "text/html":
		return r.inlineImages(offline(v), nil)
	case "image/svg+xml":
		return `<div class="svg">` + offline(xmlPrologRE.ReplaceAllString(v, "")) + "</div>"
	case "image/png", "image/jpeg", "image/gif":
		data := strings.Join(strings.Fields(v), "")
		return `<img alt="" src="data:` + mimeType + `;base64,` + data + `">`
	case "text/markdown":
		return r.markdown(v, nil)
	case "application/json":
		var pretty bytes.Buffer
		if json.Indent(&pretty, raw, "", "  ") == nil {
			v = pretty.String()
		}
		return `<pre class="text">` + html.EscapeString(v) + "</pre>"
	default: // text/latex, text/plain
		return `<pre class="text">` + html.EscapeString(notebook.PlainText((v))) + "</pre>"
	}
}

// offline drops remote resources from an output fragment.
func offline(frag string) string {
	s, _ := StripRemote(frag)
	return s
}

func (r *reportRenderer) markdown(src string, attachments map[string]notebook.MIMEBundle) string {
	var buf bytes.Buffer
	ctx := parser.NewContext(parser.WithIDs(r.ids))
	if err := r.md.Convert([]byte(src), &buf, parser.WithContext(ctx)); err != nil {
		return "<pre>" + html.EscapeString(src) + "</pre>"
	}
	return r.inlineImages(offline(buf.String()), attachments)
}

var imgSrcRE = regexp.MustCompile(`(?i)(<img\b(?:[^>"']|"[^"]*"|'[^']*')*?\bsrc\s*=\s*)("[^"]*"|'[^']*')`)

// inlineImages replaces <img src> that point at a cell attachment or a
// local file with data URLs, so the report needs no file beside it. An image
// that cannot be found is replaced by a note.
func (r *reportRenderer) inlineImages(frag string, attachments map[string]notebook.MIMEBundle) string {
	return imgSrcRE.ReplaceAllStringFunc(frag, func(s string) string {
		m := imgSrcRE.FindStringSubmatch(s)
		src := html.UnescapeString(strings.Trim(m[2], `"'`))
		low := strings.ToLower(src)
		if strings.HasPrefix(low, "data:") || isRemote(src) {
			return s
		}
		if name, ok := strings.CutPrefix(src, "attachment:"); ok {
			for mt, v := range attachments[name] {
				var t notebook.Text
				if json.Unmarshal(v, &t) == nil && strings.HasPrefix(mt, "image/") {
					return m[1] + `"data:` + mt + `;base64,` + strings.Join(strings.Fields(string(t)), "") + `"`
				}
			}
			return m[1] + `"data:," data-missing="attachment ` + html.EscapeString(name) + `"`
		}
		if r.info.BaseDir != "" && !filepath.IsAbs(src) && !strings.Contains(src, ":") {
			p := filepath.Join(r.info.BaseDir, filepath.FromSlash(strings.SplitN(src, "?", 2)[0]))
			if data, err := limits.ReadFile(p, markdownImage); err == nil {
				mt := mime.TypeByExtension(strings.ToLower(filepath.Ext(p)))
				if mt == "" {
					mt = "application/octet-stream"
				}
				return m[1] + `"data:` + mt + `;base64,` + base64.StdEncoding.EncodeToString(data) + `"`
			}
		}
		return s
	})
}

// markdownImage bounds an image file a markdown cell shows, embedded in
// the report (a device or FIFO is refused, not read).
var markdownImage = limits.File{What: "an image in a notebook's markdown", Max: 64 << 20}

// notebookTitle is the text of the notebook's first markdown heading, or
// its file name.
func notebookTitle(nb *notebook.Notebook, name string) string {
	for _, c := range nb.Cells {
		if c.CellType != "markdown" {
			continue
		}
		for _, l := range strings.Split(string(c.Source), "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "#") {
				var buf bytes.Buffer
				if goldmark.Convert([]byte(l), &buf) != nil {
					continue
				}
				if t := notebook.HTMLToText(buf.String()); t != "" {
					return t
				}
			}
		}
	}
	if name == "" {
		return "notebook"
	}
	return name
}

// highlightCell returns a GoNB cell's source as highlighted HTML (the
// report's style sheet colours widget's token classes).
func highlightCell(src string) string {
	h, err := widget.Highlight("go", strings.TrimRight(src, "\n"))
	if err != nil { // "go" is always known; keep the text regardless
		return html.EscapeString(src)
	}
	return h
}

func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
}

// headingIDs gives headings unique ids across all cells of a notebook.
type headingIDs struct{ used map[string]bool }

func newHeadingIDs() *headingIDs { return &headingIDs{used: map[string]bool{}} }

// Generate implements goldmark's parser.IDs.
func (h *headingIDs) Generate(value []byte, kind gast.NodeKind) []byte {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(string(value))) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '_':
			b.WriteByte('-')
		}
	}
	base := b.String()
	if base == "" {
		base = "section"
	}
	id := base
	for n := 1; h.used[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	h.used[id] = true
	return []byte(id)
}

// Put implements goldmark's parser.IDs.
func (h *headingIDs) Put(value []byte) { h.used[string(value)] = true }

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gomase mase labs">
<meta name="gomase-result" content="{{.Result}}">
<title>{{.Title}}</title>
<style>
:root { --fg:#1f2328; --muted:#656d76; --line:#d0d7de; --code-bg:#f6f8fa; --ok:#1a7f37; --bad:#cf222e; --accent:#0969da; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:#fff; font:16px/1.55 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
header.run { position:sticky; top:0; z-index:10; display:flex; flex-wrap:wrap; gap:.4em 1.2em; align-items:center; padding:.55em 1.5em; background:#f6f8fa; border-bottom:1px solid var(--line); font-size:14px; color:var(--muted); }
header.run .name { font-weight:600; color:var(--fg); }
.badge { display:inline-block; padding:.05em .6em; border-radius:1em; font-weight:600; color:#fff; }
.badge.ok { background:var(--ok); } .badge.bad { background:var(--bad); } .badge.quick { background:#8250df; } .badge.scale { background:#0969da; }
main { max-width:1100px; margin:0 auto; padding:1.5em 1.5em 4em; }
.failure { border:1px solid var(--bad); background:#ffebe9; border-radius:6px; padding:.8em 1em; margin-bottom:1.5em; }
.failure pre { margin:.4em 0 0; white-space:pre-wrap; }
.cell { margin:0 0 1.1em; }
.cell.md { padding:0 .2em; }
.cell.md h1 { font-size:1.9em; border-bottom:1px solid var(--line); padding-bottom:.25em; }
.cell.md h2 { font-size:1.45em; border-bottom:1px solid var(--line); padding-bottom:.2em; }
.cell.md img, .display img { max-width:100%; }
.cell.md table, .display table { border-collapse:collapse; margin:.6em 0; }
.cell.md th, .cell.md td, .display th, .display td { border:1px solid var(--line); padding:.3em .7em; }
.cell.md th, .display th { background:var(--code-bg); }
.cell.md code { background:rgba(175,184,193,.2); padding:.1em .35em; border-radius:4px; font-size:88%; }
.cell.md pre code { background:none; padding:0; }
pre, code { font-family: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo, Consolas, monospace; }
pre { font-size:13.5px; line-height:1.45; overflow-x:auto; }
.cell.md pre { background:var(--code-bg); padding:.8em 1em; border-radius:6px; }
.input { display:flex; gap:.6em; }
.prompt { flex:0 0 5.2em; text-align:right; color:var(--muted); font:13px/1.9 ui-monospace, monospace; padding-top:.35em; }
.prompt .time { display:block; font-size:11px; line-height:1.2; }
.src { flex:1; min-width:0; margin:0; background:var(--code-bg); border:1px solid var(--line); border-radius:6px; padding:.6em .9em; }
.cell.failed .src { border-color:var(--bad); box-shadow:0 0 0 1px var(--bad); }
.outputs { margin-left:5.8em; padding:.3em 0 0; }
.outputs > * { margin:.35em 0; }
.stream { margin:0; white-space:pre-wrap; word-break:break-word; }
.stream.stderr { background:#fff8e6; border-left:3px solid #d4a72c; padding:.3em .6em; }
.error { background:#ffebe9; border-left:3px solid var(--bad); padding:.5em .7em; white-space:pre-wrap; word-break:break-word; }
.display { overflow-x:auto; }
.display .svg svg, .display svg { max-width:100%; height:auto; }
.text { margin:0; white-space:pre-wrap; }
.note, .gomase-removed { color:var(--muted); font-style:italic; }
.src .k { color:#cf222e; } .src .s { color:#0a3069; } .src .c { color:#6e7781; font-style:italic; }
.src .n { color:#0550ae; } .src .b { color:#8250df; } .src .m { color:#953800; font-weight:600; }
footer { max-width:1100px; margin:0 auto; padding:1em 1.5em 2em; color:var(--muted); font-size:13px; border-top:1px solid var(--line); }
@media print { header.run { position:static; } }
</style>
</head>
<body>
<header class="run">
<span class="name">{{.Name}}</span>
{{if .OK}}<span class="badge ok">OK</span>{{else}}<span class="badge bad">FAILED</span>{{end}}
{{if .Scale}}<span class="badge{{if .Quick}} quick{{else}} scale{{end}}">{{.Scale}}</span>{{end}}
{{if .Backend}}<span>backend {{.Backend}}</span>{{end}}
{{if .Duration}}<span>ran in {{.Duration}}</span>{{end}}
{{if .Kernel}}<span>kernel {{.Kernel}}</span>{{end}}
{{if .Generated}}<span>{{.Generated}}</span>{{end}}
</header>
<main>
{{if .Error}}<div class="failure"><strong>This notebook failed{{if .Failed}} at <a href="#cell-{{.Failed}}">cell {{.Failed}}</a>{{end}}.</strong><pre>{{.Error}}</pre></div>
{{end}}{{range .Cells}}{{.}}{{end}}
</main>
<footer>Report written by <code>mase labs</code> from {{.Name}}. Self-contained: it loads nothing from the network.</footer>
</body>
</html>
`))
