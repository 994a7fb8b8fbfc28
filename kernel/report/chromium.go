package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gomase/gomase/kernel/notebook"
)

// Chromium is the browser CheckSVGVisible drives headless.
var Chromium = "/usr/bin/chromium"

// Layout of the screenshot grid: each SVG found is drawn alone in a
// gridCellW x gridCellH cell, gridCols per row.
const (
	gridCellW = 320
	gridCellH = 240
	gridCols  = 4
	// MinSVGPixels is how many non-white pixels an SVG must draw in its
	// grid cell to count as visible.
	MinSVGPixels = 10
)

// SVGInfo describes one SVG image of a page: an inline <svg> (outermost)
// or an <img> whose source is SVG.
type SVGInfo struct {
	// Kind is "svg" or "img".
	Kind string
	// Where is the id of the report section holding it ("cell-3"), if any.
	Where string
	// Width and Height are its laid-out size in CSS pixels, in place.
	Width, Height float64
	// Visible is the browser's checkVisibility (display, visibility, opacity).
	Visible bool
	// Drawn is whether it has content: a non-empty bounding box of its
	// shapes (inline SVG) or a decoded image (img).
	Drawn bool
	// Pixels counts the non-white pixels it drew in its screenshot cell.
	Pixels int
	// Cell is where it was drawn in Screenshot.
	Cell image.Rectangle
}

// SVGCheck is what InspectSVGs found in a page.
type SVGCheck struct {
	// SVGs are the SVG images of the page, in document order.
	SVGs []SVGInfo
	// ConsoleErrors are the page's uncaught exceptions, unhandled promise
	// rejections and console.error calls, in order.
	ConsoleErrors []string
	// Problems lists everything that makes the check fail: no SVG (when
	// one is required), an SVG that is hidden or draws nothing, a broken
	// image, a remote resource, a console error.
	Problems []string
	// Screenshot shows every SVG alone in a grid cell (see SVGInfo.Cell),
	// as Chromium drew it with the network off.
	Screenshot image.Image
}

// Err returns the problems as one error, or nil.
func (c *SVGCheck) Err() error {
	if len(c.Problems) == 0 {
		return nil
	}
	return fmt.Errorf("%d problem(s): %s", len(c.Problems), strings.Join(c.Problems, "; "))
}

// CountColor counts the screenshot pixels within tol (per 8-bit channel)
// of col.
func (c *SVGCheck) CountColor(col color.Color, tol int) int {
	if c.Screenshot == nil {
		return 0
	}
	r0, g0, b0, _ := col.RGBA()
	n := 0
	b := c.Screenshot.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := c.Screenshot.At(x, y).RGBA()
			if near(r, r0, tol) && near(g, g0, tol) && near(bl, b0, tol) {
				n++
			}
		}
	}
	return n
}

func near(a, b uint32, tol int) bool {
	d := int(a>>8) - int(b>>8)
	return d <= tol && d >= -tol
}

// CheckSVGVisible opens an HTML file (a copy of it, alone in a fresh
// directory) in headless Chromium with the network off, and fails unless
// the page holds at least one SVG, every SVG is laid out, visible and draws
// pixels, every image loads, nothing is fetched from the network and
// nothing is reported on the console as an error.
func CheckSVGVisible(htmlPath string) error { return CheckPage(htmlPath, true) }

// CheckPage is CheckSVGVisible for pages that may hold no SVG (requireSVG
// false): an index, a report of text outputs. Every SVG the page has must
// still draw.
func CheckPage(htmlPath string, requireSVG bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := inspect(ctx, htmlPath, requireSVG)
	if err != nil {
		return err
	}
	if err := c.Err(); err != nil {
		return fmt.Errorf("%s: %w", htmlPath, err)
	}
	return nil
}

// consoleJS records, from the first script of the page on, its uncaught
// errors, unhandled rejections and console.error calls.
const consoleJS = `
(function () {
  var errs = window.__gomaseConsoleErrors = [];
  window.addEventListener('error', function (e) {
    if (e.error || e.message) errs.push((e.message || String(e.error)) + (e.filename ? ' (' + e.filename.split('/').pop() + ':' + e.lineno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) { errs.push('unhandled rejection: ' + String(e.reason)); });
  var orig = console.error;
  console.error = function () {
    errs.push('console.error: ' + Array.prototype.map.call(arguments, String).join(' '));
    return orig.apply(console, arguments);
  };
})();
`

// runScriptJS wraps a caller's script: once the page has loaded (and its
// timers had a moment), it runs the script as a function of done, and done
// stores the value it is given, with the console errors so far, in a JSON
// element that --dump-dom prints.
const runScriptJS = `
(function () {
  function done(value) {
    var out = document.createElement('script');
    out.type = 'application/json';
    out.id = 'gomase-script-result';
    out.textContent = JSON.stringify({value: value === undefined ? null : value, errors: window.__gomaseConsoleErrors || []}).replace(/</g, '\\u003c');
    document.body.appendChild(out);
  }
  function run() {
    setTimeout(function () {
      try { (function (done) { %s
      })(done); } catch (e) { (window.__gomaseConsoleErrors || []).push('page script: ' + e); done(null); }
    }, 200);
  }
  if (document.readyState === 'complete') run(); else window.addEventListener('load', run);
})();
`

var scriptResultRE = regexp.MustCompile(`(?s)<script type="application/json" id="gomase-script-result">(.*?)</script>`)

// RunScript loads an HTML file in headless Chromium with the network off,
// then runs js, the body of a function of one argument, done: js acts on the
// page (clicks, reads) and calls done(value) once with a JSON-encodable
// value, which RunScript returns, with the console errors the page logged
// (see CheckSVGVisible). It errors when Chromium cannot run or js never
// calls done.
func RunScript(ctx context.Context, htmlPath, js string) (value json.RawMessage, consoleErrors []string, err error) {
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "gomase-page-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	return runScript(ctx, page, tmp, htmlPath, js)
}

// runScript is RunScript on a page already read, working in the directory
// tmp; name says which page it is in errors.
func runScript(ctx context.Context, page []byte, tmp, name, js string) (json.RawMessage, []string, error) {
	p := filepath.Join(tmp, "script.html")
	doc := injectScript(injectEarly(page, consoleJS), fmt.Sprintf(runScriptJS, js))
	if err := os.WriteFile(p, doc, 0o644); err != nil {
		return nil, nil, err
	}
	dom, err := runChromium(ctx, filepath.Join(tmp, "script-profile"), "--window-size=1280,1024", "--dump-dom", fileURL(p))
	if err != nil {
		return nil, nil, err
	}
	m := scriptResultRE.FindSubmatch(dom)
	if m == nil {
		return nil, nil, fmt.Errorf("the page script never called done on %s (no result in --dump-dom output; %d bytes)", name, len(dom))
	}
	var res struct {
		Value  json.RawMessage `json:"value"`
		Errors []string        `json:"errors"`
	}
	if err := json.Unmarshal(m[1], &res); err != nil {
		return nil, nil, fmt.Errorf("page script result: %w", err)
	}
	return res.Value, res.Errors, nil
}

// Screenshot saves what headless Chromium (network off) shows of an HTML
// file in a width x height window as a PNG at pngPath.
func Screenshot(ctx context.Context, htmlPath, pngPath string, width, height int) error {
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return err
	}
	out, err := filepath.Abs(pngPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gomase-shot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := runChromium(ctx, filepath.Join(tmp, "profile"), fmt.Sprintf("--window-size=%d,%d", width, height),
		"--screenshot="+out, fileURL(abs)); err != nil {
		return err
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		return fmt.Errorf("chromium wrote no screenshot of %s to %s", htmlPath, out)
	}
	return nil
}

// domCheckJS (a RunScript body) collects every SVG image and image of the
// page and every resource fetched from the network.
const domCheckJS = `
  function where(e) { var s = e.closest('[id^="cell-"]'); return s ? s.id : ''; }
  function vis(e) { return e.checkVisibility ? e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}) : true; }
  function isSvgSrc(s) { return /^data:image\/svg\+xml/i.test(s) || /\.svg([?#]|$)/i.test(s); }
  var res = {svgs: [], broken: [], remote: [], wide: []};
  var W = document.documentElement.clientWidth;
  function label(e) {
    var t = e.querySelector('.gmw-title');
    return (where(e) ? where(e) + ': ' : '') + (t ? '"' + t.textContent.slice(0, 80) + '"' : e.tagName.toLowerCase());
  }
  // Every figure lies inside the window's width, and a chart (not a zoomable drawing, which pans in its frame) inside its frame.
  document.querySelectorAll('.gmw-figure').forEach(function (e) {
    if (!vis(e)) return;
    var r = e.getBoundingClientRect();
    if (r.right > W + 1 || r.left < -1) res.wide.push(label(e) + ' spans x = ' + Math.round(r.left) + '…' + Math.round(r.right) + ' px of a ' + W + '-px window');
    var v = e.querySelector('.gmw-view');
    if (v && !e.classList.contains('gmw-zoom') && v.scrollWidth > v.clientWidth + 1)
      res.wide.push(label(e) + ' is ' + v.scrollWidth + ' px wide in a ' + v.clientWidth + '-px frame');
  });
  document.querySelectorAll('svg').forEach(function (e) {
    if ((e.parentElement && e.parentElement.closest('svg')) || e.closest('.gmw-figure') || !vis(e)) return;
    var r = e.getBoundingClientRect();
    if (r.width > 0 && (r.right > W + 1 || r.left < -1)) res.wide.push(label(e) + ' (an SVG) spans x = ' + Math.round(r.left) + '…' + Math.round(r.right) + ' px of a ' + W + '-px window');
  });
  document.querySelectorAll('svg, img').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (e.tagName.toLowerCase() === 'svg') {
      if (e.parentElement && e.parentElement.closest('svg')) return;
      var bb = {width: 0, height: 0};
      try { bb = e.getBBox(); } catch (err) {}
      res.svgs.push({kind: 'svg', where: where(e), w: r.width, h: r.height, visible: vis(e), drawn: bb.width * bb.height > 0});
      return;
    }
    var src = e.currentSrc || e.src || '';
    var ok = e.complete && e.naturalWidth > 0;
    if (!ok) res.broken.push((where(e) ? where(e) + ': ' : '') + src.slice(0, 100));
    if (isSvgSrc(src)) res.svgs.push({kind: 'img', where: where(e), w: r.width, h: r.height, visible: vis(e), drawn: ok});
  });
  performance.getEntriesByType('resource').forEach(function (e) {
    if (/^(https?|ftp|wss?):/i.test(e.name)) res.remote.push(e.name);
  });
  done(res);
`

// gridJS draws a clone of every SVG image alone in a white grid cell over
// the page, so a screenshot shows what each one draws.
const gridJS = `
(function () {
  var W = %d, H = %d, COLS = %d;
  function isSvgSrc(s) { return /^data:image\/svg\+xml/i.test(s) || /\.svg([?#]|$)/i.test(s); }
  function run() {
    var grid = document.createElement('div');
    grid.style.cssText = 'position:absolute;left:0;top:0;margin:0;padding:0;background:#fff;z-index:2147483647;' +
      'display:grid;grid-template-columns:repeat(' + COLS + ',' + W + 'px);grid-auto-rows:' + H + 'px;width:' + (COLS * W) + 'px;';
    document.querySelectorAll('svg, img').forEach(function (e) {
      var tag = e.tagName.toLowerCase(), c;
      if (tag === 'svg') {
        if (e.parentElement && e.parentElement.closest('svg')) return;
        c = e.cloneNode(true);
        if (!c.getAttribute('viewBox')) {
          var w = parseFloat(c.getAttribute('width')), h = parseFloat(c.getAttribute('height'));
          if (w > 0 && h > 0) c.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
        }
      } else {
        if (!isSvgSrc(e.currentSrc || e.src || '')) return;
        c = document.createElement('img');
        c.src = e.currentSrc || e.src;
        c.style.objectFit = 'contain';
      }
      c.style.width = '100%%';
      c.style.height = '100%%';
      c.style.maxWidth = 'none';
      c.style.display = 'block';
      var cell = document.createElement('div');
      cell.style.cssText = 'box-sizing:border-box;width:' + W + 'px;height:' + H + 'px;padding:8px;overflow:hidden;background:#fff;';
      cell.appendChild(c);
      grid.appendChild(cell);
    });
    document.body.appendChild(grid);
    window.scrollTo(0, 0);
  }
  if (document.readyState === 'complete') run(); else window.addEventListener('load', run);
})();
`

// chromiumArgs are the flags of a headless run with no network: every
// fetch goes to a proxy on the discard port, loopback included.
func chromiumArgs(userDir string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-quic",
		"--disable-extensions", "--disable-dev-shm-usage", "--mute-audio",
		"--hide-scrollbars", "--force-device-scale-factor=1",
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--user-data-dir=" + userDir,
		"--virtual-time-budget=5000",
	}
}

// InspectSVGs loads htmlPath in headless Chromium twice, network off:
// once to measure every SVG in place (and catch broken images and remote
// fetches), once to screenshot each SVG alone in a grid. It errors when
// Chromium cannot run; what is wrong with the page is in Problems.
func InspectSVGs(ctx context.Context, htmlPath string) (*SVGCheck, error) {
	return inspect(ctx, htmlPath, true)
}

func inspect(ctx context.Context, htmlPath string, requireSVG bool) (*SVGCheck, error) {
	if _, err := os.Stat(Chromium); err != nil {
		return nil, fmt.Errorf("headless check needs %s, which is missing: run make setup", Chromium)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gomase-svgcheck-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	check := &SVGCheck{}
	for _, r := range RemoteResources(string(page)) {
		check.Problems = append(check.Problems, "remote resource in the HTML: "+r)
	}

	// Run 1: measure in place.
	raw, consoleErrs, err := runScript(ctx, page, tmp, htmlPath, domCheckJS)
	if err != nil {
		return nil, err
	}
	check.ConsoleErrors = consoleErrs
	for _, e := range consoleErrs {
		check.Problems = append(check.Problems, "console: "+e)
	}
	var res struct {
		SVGs []struct {
			Kind    string  `json:"kind"`
			Where   string  `json:"where"`
			W       float64 `json:"w"`
			H       float64 `json:"h"`
			Visible bool    `json:"visible"`
			Drawn   bool    `json:"drawn"`
		} `json:"svgs"`
		Broken []string `json:"broken"`
		Remote []string `json:"remote"`
		Wide   []string `json:"wide"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("check script result: %w", err)
	}
	for _, s := range res.SVGs {
		check.SVGs = append(check.SVGs, SVGInfo{Kind: s.Kind, Where: s.Where, Width: s.W, Height: s.H, Visible: s.Visible, Drawn: s.Drawn})
	}
	for _, b := range res.Broken {
		check.Problems = append(check.Problems, "image did not load: "+b)
	}
	for _, r := range res.Remote {
		check.Problems = append(check.Problems, "page tried to fetch "+r)
	}
	for _, w := range res.Wide {
		check.Problems = append(check.Problems, "figure does not fit a 1280-px window: "+w)
	}
	if len(check.SVGs) == 0 {
		if requireSVG {
			check.Problems = append(check.Problems, "no SVG in the page (neither an inline <svg> nor an <img> of an SVG)")
		}
		return check, nil
	}

	// Run 2: screenshot the SVGs alone, one per grid cell.
	rows := (len(check.SVGs) + gridCols - 1) / gridCols
	gridPage := filepath.Join(tmp, "grid.html")
	if err := os.WriteFile(gridPage, injectScript(page, fmt.Sprintf(gridJS, gridCellW, gridCellH, gridCols)), 0o644); err != nil {
		return nil, err
	}
	shot := filepath.Join(tmp, "shot.png")
	if _, err := runChromium(ctx, filepath.Join(tmp, "profile2"),
		fmt.Sprintf("--window-size=%d,%d", gridCols*gridCellW, rows*gridCellH),
		"--screenshot="+shot, fileURL(gridPage)); err != nil {
		return nil, err
	}
	f, err := os.Open(shot)
	if err != nil {
		return nil, fmt.Errorf("chromium wrote no screenshot: %w", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	check.Screenshot = img
	for i := range check.SVGs {
		s := &check.SVGs[i]
		x, y := (i%gridCols)*gridCellW, (i/gridCols)*gridCellH
		s.Cell = image.Rect(x, y, x+gridCellW, y+gridCellH).Intersect(img.Bounds())
		s.Pixels = nonWhite(img, s.Cell)
		name := fmt.Sprintf("SVG %d (%s", i+1, s.Kind)
		if s.Where != "" {
			name += " in " + s.Where
		}
		name += ")"
		switch {
		case !s.Visible || s.Width < 1 || s.Height < 1:
			check.Problems = append(check.Problems, fmt.Sprintf("%s is not visible in the page (%.0fx%.0f px, visible=%v)", name, s.Width, s.Height, s.Visible))
		case !s.Drawn:
			check.Problems = append(check.Problems, name+" has no content (empty bounding box or undecoded image)")
		case s.Pixels < MinSVGPixels:
			check.Problems = append(check.Problems, fmt.Sprintf("%s draws %d non-white pixels (want at least %d)", name, s.Pixels, MinSVGPixels))
		}
	}
	return check, nil
}

// nonWhite counts pixels of r that are not (nearly) white.
func nonWhite(img image.Image, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr>>8 < 245 || cg>>8 < 245 || cb>>8 < 245 {
				n++
			}
		}
	}
	return n
}

// headOpenRE finds where a document's first script can go.
var headOpenRE = regexp.MustCompile(`(?i)<(head|html)(\s[^>]*)?>`)

// injectEarly adds an inline script before anything else of the document
// can run: right after <head> (or <html>), else at the very start.
func injectEarly(page []byte, js string) []byte {
	tag := []byte("<script>" + js + "</script>")
	at := 0
	if loc := headOpenRE.FindIndex(page); loc != nil {
		at = loc[1]
	}
	return append(append(append([]byte{}, page[:at]...), tag...), page[at:]...)
}

// injectScript adds an inline script at the end of an HTML document.
func injectScript(page []byte, js string) []byte {
	tag := []byte("<script>" + js + "</script>")
	if i := bytes.LastIndex(bytes.ToLower(page), []byte("</body>")); i >= 0 {
		return append(append(append([]byte{}, page[:i]...), tag...), page[i:]...)
	}
	return append(append([]byte{}, page...), tag...)
}

func fileURL(path string) string {
	return "file://" + filepath.ToSlash(path)
}

// runChromium runs Chromium headless with the network off and returns its
// stdout.
func runChromium(ctx context.Context, profile string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Chromium, append(chromiumArgs(profile), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", Chromium, strings.Join(args, " "), err, notebook.LastLines(stderr.String(), 10))
	}
	return stdout.Bytes(), nil
}
