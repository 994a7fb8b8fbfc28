package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
	"github.com/gomase/gomase/mase/ui/widget"
)

// remoteAttrRE is the test's own, independent notion of "fetches from the
// network": an http(s) or protocol-relative URL in src/href of a script,
// link or img element.
var remoteAttrRE = regexp.MustCompile(`(?is)<(script|link|img)\b[^>]*\b(src|href)\s*=\s*["']?\s*(https?:)?//`)

// mustRead reads one of the notebook package's test notebooks.
func mustRead(t *testing.T, name string) *notebook.Notebook {
	t.Helper()
	nb, err := notebook.ReadNotebook(filepath.Join("..", "notebook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func render(t *testing.T, name string, info Info) string {
	t.Helper()
	var buf bytes.Buffer
	if err := RenderHTML(&buf, mustRead(t, name), info); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestReportIsOffline(t *testing.T) {
	page := render(t, "outputs.ipynb", Info{Name: "outputs.ipynb", BaseDir: "testdata", Scale: scale.Quick, Backend: "xla:cuda", Duration: 3 * time.Second})
	if m := remoteAttrRE.FindString(page); m != "" {
		t.Errorf("report loads a remote resource: %s", m)
	}
	if err := CheckOffline(page); err != nil {
		t.Error(err)
	}
	for _, want := range []string{
		`<svg xmlns="http://www.w3.org/2000/svg" width="200"`, // text/html SVG, inline
		`>second</text>`,                  // image/svg+xml, inline
		`<strong>bold</strong> markdown`,  // text/markdown output
		`<table>`,                         // GFM table
		`href="https://example.com/docs"`, // links stay
		`remote resource left out of this offline report: https://cdn.plot.ly/plotly-2.35.2.min.js`,
		`remote resource left out of this offline report: https://example.com/logo.png`,
		`id="outputs"`, `id="outputs-1"`, // heading ids unique across cells
		`progress 100%`, `&lt;b&gt;not bold&lt;/b&gt;`,
		`<span class="k">import</span>`, `<span class="m">%%</span>`, `<span class="c">// comment</span>`,
		`quick scale`, `backend xla:cuda`, `3.0 s`, `2.5 s`, // run info and the cell's time
		`&#34;a&#34;: 1`, // application/json, indented
		`<title>Outputs fixture</title>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(page, `src="data:image/png;base64,`); n != 3 {
		t.Errorf("report embeds %d PNGs, want 3 (output, local file, attachment)", n)
	}
	for _, bad := range []string{"\x1b", "progress 50%", "<?xml", "<!DOCTYPE svg", "attachment:a.png", `src="dot.png"`, "fonts.googleapis.com/css?"} {
		if strings.Contains(page, bad) {
			t.Errorf("report still contains %q", bad)
		}
	}
}

func TestReportOfFailure(t *testing.T) {
	nb := mustRead(t, "failed_compile.ipynb")
	err := notebook.FirstError(nb)
	page := render(t, "failed_compile.ipynb", Info{Name: "failed_compile.ipynb", Err: err, FailedCell: err.Index})
	for _, want := range []string{"FAILED", `href="#cell-3"`, `class="cell code failed" id="cell-3"`, "undefined: undefinedThing", "In [ ]:"} {
		if !strings.Contains(page, want) {
			t.Errorf("failure report lacks %q", want)
		}
	}
	if err := CheckOffline(page); err != nil {
		t.Error(err)
	}
}

func TestWriteReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	if err := Write(out, mustRead(t, "outputs.ipynb"), Info{Name: "outputs.ipynb", Err: errors.New("x")}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) {
		t.Errorf("WriteReport wrote %d bytes (%v), want an HTML page", len(data), err)
	}
}

func TestRemoteResources(t *testing.T) {
	doc := `<a href="https://ok.example/">a link is fine</a>
<script src="https://cdn.example/a.js"></script><script>inline()</script>
<link rel="stylesheet" href="//cdn.example/b.css"><img src='http://x.example/c.png'>
<img srcset="local.png 1x, https://x.example/d.png 2x"><img src="data:image/png;base64,AA">
<div style="background:url(&quot;https://x.example/e.png&quot;)"></div>
<style>@import "https://x.example/f.css"; .a { background: url(data:,) }</style>
<svg><image href="https://x.example/g.png"/><a xlink:href="https://ok.example/">svg link</a></svg>`
	got := RemoteResources(doc)
	want := []string{
		"<script src=https://cdn.example/a.js>", "<link href=//cdn.example/b.css>", "<img src=http://x.example/c.png>",
		"<img srcset=https://x.example/d.png>", "css https://x.example/e.png", "<image href=https://x.example/g.png>",
		"css https://x.example/f.css",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("RemoteResources =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	clean, removed := StripRemote(doc)
	if len(removed) != len(want) {
		t.Errorf("StripRemote removed %d resources %q, want %d", len(removed), removed, len(want))
	}
	if r := RemoteResources(clean); len(r) != 0 {
		t.Errorf("after StripRemote, still remote: %q\n%s", r, clean)
	}
	if !strings.Contains(clean, "<script>inline()</script>") || !strings.Contains(clean, `href="https://ok.example/"`) {
		t.Errorf("StripRemote removed more than remote resources:\n%s", clean)
	}
}

// TestReportWidgetAssetsOnce: every widget output carries the widgets'
// style and script; the report keeps one copy.
func TestReportWidgetAssetsOnce(t *testing.T) {
	out := func(w widget.Widget) string {
		b, err := json.Marshal(w.HTML())
		if err != nil {
			t.Fatal(err)
		}
		return `{"output_type": "display_data", "metadata": {}, "data": {"text/html": ` + string(b) + `}}`
	}
	src := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "gomase"}}, "cells": [
	 {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": "%%", "outputs": [` + out(widget.NewTable("first", "x")) + `]},
	 {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 2, "source": "%%", "outputs": [` + out(widget.NewTable("second", "y")) + `]}]}`
	nb, err := notebook.ParseNotebook([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := RenderHTML(&buf, nb, Info{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if n := strings.Count(page, "window.gomaseWidgets = {version"); n != 1 {
		t.Errorf("report holds the widget script %d times, want 1", n)
	}
	for _, c := range []string{"<caption>first</caption>", "<caption>second</caption>"} {
		if !strings.Contains(page, c) {
			t.Errorf("report lost %s", c)
		}
	}
}
