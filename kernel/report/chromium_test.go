package report

import (
	"bytes"
	"context"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomase/gomase/kernel/notebook"
)

// magenta is the fill of the fixtures' SVGs, a colour nothing else in a
// report uses.
var magenta = color.RGBA{0xe0, 0x15, 0x7a, 0xff}

func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Fatalf("headless checks need %s: run make setup", Chromium)
	}
}

func writeHTML(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "page.html")
	doc := "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>" + body + "</body></html>"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const fixtureSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="120"><rect x="10" y="10" width="180" height="100" fill="#e0157a"/></svg>`

// TestCheckSVGVisibleOnReport renders the outputs fixture (an SVG as
// text/html, one as image/svg+xml) and checks Chromium draws both.
func TestCheckSVGVisibleOnReport(t *testing.T) {
	requireChromium(t)
	t.Parallel()
	var buf bytes.Buffer
	if err := RenderHTML(&buf, mustRead(t, "outputs.ipynb"), Info{Name: "outputs.ipynb", BaseDir: "testdata"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "outputs.html")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := InspectSVGs(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if len(c.SVGs) != 2 {
		t.Errorf("found %d SVGs, want 2: %+v", len(c.SVGs), c.SVGs)
	}
	// Each 180x100 rectangle is drawn in magenta.
	for i, s := range c.SVGs {
		if s.Where != "cell-4" {
			t.Errorf("SVG %d is in %q, want cell-4", i+1, s.Where)
		}
	}
	if n := c.CountColor(magenta, 8); n < 2*150*80 {
		t.Errorf("screenshot has %d magenta pixels, want the two rectangles (>= %d)", n, 2*150*80)
	}
}

// TestCheckSVGVisibleFails: the check must fail when the SVG is missing,
// remote, hidden or empty.
func TestCheckSVGVisibleFails(t *testing.T) {
	requireChromium(t)
	for _, tc := range []struct{ name, body, want string }{
		{"missing", `<p>no picture here</p><img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==">`, "no SVG in the page"},
		{"remote", `<img src="https://example.com/picture.svg" width="200" height="100">`, "remote resource in the HTML: <img src=https://example.com/picture.svg>"},
		{"hidden", `<div style="display:none">` + fixtureSVG + `</div>`, "is not visible in the page"},
		{"empty", `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="120"></svg>`, "has no content"},
		{"white", `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="120"><rect width="200" height="120" fill="#ffffff"/></svg>`, "non-white pixels"},
		{"past the window", `<div style="width:1400px"><div style="margin-left:1300px">` + fixtureSVG + `</div></div>`, "does not fit a 1280-px window"},
		{"figure past the window", `<div style="display:flex"><div class="gmw-figure" style="width:900px;flex:none">` + fixtureSVG +
			`</div><div class="gmw-figure" style="width:900px;flex:none"><div class="gmw-title">second</div>` + fixtureSVG + `</div></div>`,
			`"second" spans x = 908…1808 px of a 1280-px window`},
		{"chart wider than its frame", `<div class="gmw-figure"><div class="gmw-view" style="width:300px;overflow:auto">` +
			`<svg xmlns="http://www.w3.org/2000/svg" width="600" height="120"><rect width="600" height="120" fill="#e0157a"/></svg></div></div>`,
			"is 600 px wide in a 300-px frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckSVGVisible(writeHTML(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckSVGVisible = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestCheckSVGVisibleRemoteFetchFails checks the network is really off: a
// remote image that the static scan cannot see (set by a script) breaks.
func TestCheckSVGVisibleRemoteFetchFails(t *testing.T) {
	requireChromium(t)
	t.Parallel()
	body := fixtureSVG + `<img id="i" width="10" height="10"><script>document.getElementById('i').src = 'http' + '://127.0.0.1:8/x.png';</script>`
	c, err := InspectSVGs(context.Background(), writeHTML(t, body))
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(c.Problems, "; ")
	if !strings.Contains(joined, "image did not load") {
		t.Errorf("problems %q, want the remote image to fail to load", c.Problems)
	}
}

// TestCheckPageConsoleErrors: an exception, a rejected promise or a
// console.error call on the page fails the check, SVG or not.
func TestCheckPageConsoleErrors(t *testing.T) {
	requireChromium(t)
	for _, tc := range []struct{ name, script, want string }{
		{"throw", `throw new Error("boom in widget")`, "Uncaught Error: boom in widget"},
		{"console", `console.error("bad", 42)`, "console.error: bad 42"},
		{"rejection", `Promise.reject(new Error("nope"))`, "unhandled rejection: Error: nope"},
		{"late", `setTimeout(function () { null.x; }, 50)`, "Uncaught TypeError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := CheckPage(writeHTML(t, fixtureSVG+"<script>"+tc.script+"</script>"), false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckPage = %v, want an error with %q", err, tc.want)
			}
		})
	}
	t.Run("clean page without SVG", func(t *testing.T) {
		t.Parallel()
		p := writeHTML(t, `<p>index</p><script>console.log("fine")</script>`)
		if err := CheckPage(p, false); err != nil {
			t.Errorf("CheckPage(no SVG required) = %v", err)
		}
		if err := CheckPage(p, true); err == nil || !strings.Contains(err.Error(), "no SVG") {
			t.Errorf("CheckPage(SVG required) = %v, want the missing SVG named", err)
		}
	})
}

// TestRunScriptAndScreenshot: a page script acts on the page and returns a
// value; a screenshot is a PNG of the window's size.
func TestRunScriptAndScreenshot(t *testing.T) {
	requireChromium(t)
	p := writeHTML(t, `<button id="b" onclick="this.textContent='clicked'">press</button>`+fixtureSVG)
	v, errs, err := RunScript(context.Background(), p, `document.getElementById('b').click(); done({text: document.getElementById('b').textContent});`)
	if err != nil {
		t.Fatal(err)
	}
	if string(v) != `{"text":"clicked"}` || len(errs) != 0 {
		t.Errorf("RunScript = %s, %q; want the clicked text and no errors", v, errs)
	}
	if _, _, err := RunScript(context.Background(), p, `/* never calls done */`); err == nil || !strings.Contains(err.Error(), "never called done") {
		t.Errorf("RunScript without done = %v, want an error saying so", err)
	}
	shot := filepath.Join(t.TempDir(), "shots", "page.png")
	if err := Screenshot(context.Background(), p, shot, 400, 300); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 400 || b.Dy() != 300 {
		t.Errorf("screenshot is %v, want 400x300", b)
	}
	if n := nonWhite(img, img.Bounds()); n < 1000 {
		t.Errorf("screenshot has %d non-white pixels, want the page drawn", n)
	}
}

// BenchmarkCheckPage times the browser check of one report (the outputs
// fixture: two SVGs), as `mase labs --check` runs it on every report.
func BenchmarkCheckPage(b *testing.B) {
	if _, err := os.Stat(Chromium); err != nil {
		b.Fatalf("needs %s: run make setup", Chromium)
	}
	nb, err := notebook.ReadNotebook(filepath.Join("testdata", "outputs.ipynb"))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := RenderHTML(&buf, nb, Info{Name: "outputs.ipynb", BaseDir: "testdata"}); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), "outputs.html")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := CheckPage(p, true); err != nil {
			b.Fatal(err)
		}
	}
}

func TestInjectEarly(t *testing.T) {
	for _, tc := range []struct{ page, want string }{
		{`<!DOCTYPE html><html lang="en"><head><title>t</title>`, `<!DOCTYPE html><html lang="en"><script>S</script><head><title>t</title>`},
		{`<HEAD><title>t</title>`, `<HEAD><script>S</script><title>t</title>`},
		{`<body><header>x</header></body>`, `<script>S</script><body><header>x</header></body>`}, // <header> is no <head>
	} {
		if got := string(injectEarly([]byte(tc.page), "S")); got != tc.want {
			t.Errorf("injectEarly(%q) = %q, want %q", tc.page, got, tc.want)
		}
	}
}
