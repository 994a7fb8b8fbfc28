// Package widget is the one way gomase shows results: graphs, plots, tables,
// highlighted source and waveforms. Every widget is a self-contained HTML
// fragment (inline SVG, CSS and a small script; nothing fetched from the
// network), so the same value shows inline in a GoNB notebook cell (Show),
// in the HTML reports `mase labs` writes from those notebooks, and in
// standalone pages (Page, WriteHTML) readable without Jupyter.
//
// The interactive parts (zoom and pan of graphs, PNG/SVG download, sorting
// tables) are plain JavaScript bound by event delegation on the document, so
// they work wherever the fragment lands and whenever it is inserted; without
// scripts (an untrusted notebook) the widgets still render, static.
package widget

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gomase/gomase/mase/ui/display"
)

// Widget is anything that renders as a self-contained HTML fragment.
type Widget interface {
	// HTML returns the fragment: its own style sheet and script included,
	// no external resource.
	HTML() string
}

// Show displays widgets inline when the program runs as a GoNB cell and
// reports whether they were shown; elsewhere (go run, tests, the CLI) it
// does nothing, and callers write a Page instead.
func Show(ws ...Widget) bool {
	if !display.InNotebook() {
		return false
	}
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.HTML())
	}
	return display.HTML(b.String())
}

// Page returns a standalone HTML document holding the widgets in order,
// under a title; it needs no network and no Jupyter.
func Page(title string, ws ...Widget) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1">` + "\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString(title))
	b.WriteString("<style>body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#1f2328}</style>\n")
	b.WriteString("</head>\n<body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(title))
	for _, w := range ws {
		b.WriteString(w.HTML())
		b.WriteByte('\n')
	}
	b.WriteString("</body>\n</html>\n")
	return []byte(DedupeAssets(b.String()))
}

// DedupeAssets keeps the first copy of the widgets' style sheet and script
// in an HTML document and drops the others: every fragment carries them so
// that it stands alone, but a page of many widgets (a notebook's report)
// needs them once, before the first widget.
func DedupeAssets(doc string) string {
	i := strings.Index(doc, assets)
	if i < 0 {
		return doc
	}
	end := i + len(assets)
	return doc[:end] + strings.ReplaceAll(doc[end:], assets, "")
}

// WriteHTML writes Page(title, ws...) to path atomically (a temporary file
// renamed over it), creating the directory.
func WriteHTML(path, title string, ws ...Widget) error {
	if !strings.HasSuffix(path, ".html") && !strings.HasSuffix(path, ".htm") {
		return fmt.Errorf("widget: page path %q must end in .html", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("widget: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".page-*.tmp")
	if err != nil {
		return fmt.Errorf("widget: %w", err)
	}
	_, werr := tmp.Write(Page(title, ws...))
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("widget: writing %s: %w", path, werr)
	}
	return nil
}

// HTMLWidget is a fragment of trusted HTML shown as it is.
type HTMLWidget string

// HTML returns the fragment.
func (h HTMLWidget) HTML() string { return string(h) }

// Text is plain text shown in a paragraph, escaped.
type Text string

// HTML returns the text as an escaped paragraph.
func (t Text) HTML() string { return "<p>" + html.EscapeString(string(t)) + "</p>" }

// slugRE matches runs of characters not kept in file names.
var slugRE = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileName turns a title into a download file name (without extension).
func fileName(title, fallback string) string {
	s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(title), "-"), "-.")
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-.")
	}
	if s == "" {
		return fallback
	}
	return s
}

// assets is the style sheet and script every fragment carries (the source
// below with each line's indentation dropped). The script installs its
// handlers once per page (a second copy returns at once).
var assets = compact(assetsSource)

// compact drops the leading white space of every line: harmless in CSS and
// in this script (no multi-line strings), a fifth of the bytes.
func compact(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " \t")
	}
	return strings.Join(lines, "\n")
}

const assetsSource = `<style>
.gmw{margin:.6em 0;font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;font-size:13px;color:#1f2328}
.gmw-figure{width:fit-content;max-width:100%}.gmw-figure.gmw-zoom{width:auto}
.gmw-bar{display:flex;flex-wrap:wrap;align-items:center;gap:.4em;margin:.2em 0}
.gmw-title{font-weight:600;margin-right:auto}
.gmw-btn{font:inherit;font-size:12px;padding:1px 8px;border:1px solid #bbb;border-radius:4px;background:#f6f8fa;cursor:pointer}
.gmw-btn:hover{background:#e9ecef}
.gmw-view{overflow:auto;border:1px solid #e1e4e8;border-radius:4px;background:#fff;outline:none}
.gmw-view:focus{border-color:#0969da}
.gmw-zoom .gmw-view{cursor:grab}
.gmw-zoom .gmw-view.gmw-drag{cursor:grabbing}
.gmw-view svg{display:block;max-width:none!important;max-height:none!important}
.gmw-legend{display:flex;flex-wrap:wrap;gap:.3em 1em;margin:.3em 0}
.gmw-key{display:inline-flex;align-items:center;gap:.35em}
.gmw-swatch{display:inline-block;width:14px;height:14px;border:1px solid #888;border-radius:3px}
.gmw-hint{color:#57606a;font-size:11px}
table.gmw-table{border-collapse:collapse;margin:.3em 0}
table.gmw-table caption{caption-side:top;text-align:left;font-weight:600;padding:.2em 0}
table.gmw-table th,table.gmw-table td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
table.gmw-table th{background:#f6f8fa;cursor:pointer;user-select:none;white-space:nowrap}
table.gmw-table th::after{content:" \2195";color:#aaa;font-size:10px}
table.gmw-table th.gmw-asc::after{content:" \25B2";color:#0969da}
table.gmw-table th.gmw-desc::after{content:" \25BC";color:#0969da}
table.gmw-table td.gmw-num{text-align:right;font-variant-numeric:tabular-nums}
table.gmw-table tbody tr:nth-child(even){background:#fafbfc}
pre.gmw-src{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px;line-height:1.4;background:#f8f8f8;border:1px solid #ddd;border-radius:4px;padding:6px 0;overflow:auto;margin:0}
pre.gmw-src .gmw-ln{display:inline-block;min-width:3.5em;padding-right:1em;text-align:right;color:#999;user-select:none}
pre.gmw-src .k{color:#cf222e;font-weight:600}pre.gmw-src .s{color:#0a3069}pre.gmw-src .c{color:#6e7781;font-style:italic}
pre.gmw-src .n{color:#0550ae}pre.gmw-src .b{color:#8250df}pre.gmw-src .m{color:#953800}pre.gmw-src .p{color:#b35900}
</style><script>
(function () {
  if (window.gomaseWidgets) return;
  window.gomaseWidgets = {version: 1};
  function widgetOf(e) { return e.closest('.gmw'); }
  function save(url, name) {
    var a = document.createElement('a');
    a.href = url; a.download = name; a.style.display = 'none';
    document.body.appendChild(a); a.click(); a.remove();
  }
  function svgOf(w) { return w.querySelector('.gmw-view svg'); }
  function svgText(svg) {
    var s = new XMLSerializer().serializeToString(svg);
    if (s.indexOf('xmlns=') < 0) s = s.replace('<svg', '<svg xmlns="http://www.w3.org/2000/svg"');
    return s;
  }
  function downloadSVG(w) {
    var svg = svgOf(w); if (!svg) return;
    var url = URL.createObjectURL(new Blob([svgText(svg)], {type: 'image/svg+xml'}));
    save(url, w.getAttribute('data-gmw-name') + '.svg');
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function downloadPNG(w) {
    var svg = svgOf(w); if (!svg) return;
    var r = svg.getBoundingClientRect(), k = 2, img = new Image();
    img.onload = function () {
      var c = document.createElement('canvas');
      c.width = Math.max(1, Math.round(r.width * k)); c.height = Math.max(1, Math.round(r.height * k));
      var g = c.getContext('2d');
      g.fillStyle = '#fff'; g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      save(c.toDataURL('image/png'), w.getAttribute('data-gmw-name') + '.png');
    };
    img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svgText(svg));
  }
  function natural(svg) {
    // The drawing's own size (its width and height attributes, in px),
    // whatever the page's style sheets did to it; else its laid-out size.
    if (!svg.gmwSize) {
      var w = 0, h = 0;
      try { w = svg.width.baseVal.value; h = svg.height.baseVal.value; } catch (err) {}
      if (!(w > 0 && h > 0) || svg.width.baseVal.unitType === 2 || svg.height.baseVal.unitType === 2) {
        var r = svg.getBoundingClientRect();
        w = r.width; h = r.height;
      }
      svg.gmwSize = {w: w, h: h};
    }
    return svg.gmwSize;
  }
  function scaleTo(w, s) {
    var svg = svgOf(w); if (!svg) return;
    var n = natural(svg);
    s = Math.min(8, Math.max(0.05, s));
    w.gmwScale = s;
    svg.style.setProperty('max-width', 'none', 'important');
    svg.style.width = (n.w * s) + 'px';
    svg.style.height = (n.h * s) + 'px';
    var z = w.querySelector('.gmw-zoomlevel');
    if (z) z.textContent = Math.round(s * 100) + '%';
  }
  function zoomAt(w, f, cx, cy) {
    var v = w.querySelector('.gmw-view'), s = w.gmwScale || 1;
    var x = (v.scrollLeft + cx) / s, y = (v.scrollTop + cy) / s;
    scaleTo(w, s * f);
    s = w.gmwScale;
    v.scrollLeft = x * s - cx; v.scrollTop = y * s - cy;
  }
  function fit(w) {
    var v = w.querySelector('.gmw-view'), svg = svgOf(w); if (!svg) return;
    var n = natural(svg);
    scaleTo(w, Math.min((v.clientWidth - 2) / n.w, (v.clientHeight - 2) / n.h));
  }
  function sortTable(th) {
    var table = th.closest('table'), body = table.tBodies[0]; if (!body) return;
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = !th.classList.contains('gmw-asc');
    th.parentNode.querySelectorAll('th').forEach(function (h) { h.classList.remove('gmw-asc', 'gmw-desc'); });
    th.classList.add(asc ? 'gmw-asc' : 'gmw-desc');
    function key(row) {
      var c = row.cells[col]; if (!c) return {n: NaN, s: ''};
      var k = c.getAttribute('data-sort'), t = c.textContent.trim();
      var n = k !== null ? parseFloat(k) : (/^[-+\u2212]?(\d|\.\d)/.test(t) ? parseFloat(t.replace(/\u2212/, '-').replace(/,/g, '')) : NaN);
      return {n: n, s: t};
    }
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) { return {r: r, k: key(r), i: i}; });
    rows.sort(function (a, b) {
      var d;
      if (!isNaN(a.k.n) && !isNaN(b.k.n)) d = a.k.n - b.k.n;
      else if (!isNaN(a.k.n)) d = -1;
      else if (!isNaN(b.k.n)) d = 1;
      else d = a.k.s.localeCompare(b.k.s, undefined, {numeric: true});
      if (!asc) d = -d;
      return d || a.i - b.i;
    });
    rows.forEach(function (x) { body.appendChild(x.r); });
  }
  document.addEventListener('click', function (e) {
    if (!e.target.closest) return;
    var th = e.target.closest('table.gmw-table thead th');
    if (th) { sortTable(th); return; }
    var b = e.target.closest('[data-gmw-action]'); if (!b) return;
    var w = widgetOf(b); if (!w) return;
    var v = w.querySelector('.gmw-view');
    switch (b.getAttribute('data-gmw-action')) {
      case 'zoom-in': zoomAt(w, 1.25, v.clientWidth / 2, v.clientHeight / 2); break;
      case 'zoom-out': zoomAt(w, 0.8, v.clientWidth / 2, v.clientHeight / 2); break;
      case 'fit': fit(w); break;
      case 'reset': scaleTo(w, 1); break;
      case 'svg': downloadSVG(w); break;
      case 'png': downloadPNG(w); break;
    }
  });
  document.addEventListener('wheel', function (e) {
    if (!e.target.closest) return;
    var v = e.target.closest('.gmw-zoom .gmw-view');
    if (!v || document.activeElement !== v) return; // zoom only after a click into the view
    e.preventDefault();
    var r = v.getBoundingClientRect();
    zoomAt(widgetOf(v), e.deltaY < 0 ? 1.1 : 1 / 1.1, e.clientX - r.left, e.clientY - r.top);
  }, {passive: false});
  var drag = null;
  document.addEventListener('mousedown', function (e) {
    if (!e.target.closest || e.button !== 0) return;
    var v = e.target.closest('.gmw-zoom .gmw-view'); if (!v) return;
    drag = {v: v, x: e.clientX, y: e.clientY, l: v.scrollLeft, t: v.scrollTop};
    v.classList.add('gmw-drag');
  });
  document.addEventListener('mousemove', function (e) {
    if (!drag) return;
    drag.v.scrollLeft = drag.l - (e.clientX - drag.x);
    drag.v.scrollTop = drag.t - (e.clientY - drag.y);
  });
  document.addEventListener('mouseup', function () {
    if (drag) { drag.v.classList.remove('gmw-drag'); drag = null; }
  });
})();
</script>`
