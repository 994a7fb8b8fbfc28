// Package webui runs one notebook the way a user meets it, as an end-to-end
// check of the gomase kernel in Jupyter's web UI: it starts a real classic
// `jupyter notebook` server (Debian's Notebook 6.4) on loopback serving a
// temporary copy of the notebook, opens the notebook page in headless
// Chromium (driven with go-rod, the network closed to all but loopback),
// waits for the "Go (gomase)" kernel, clicks Cell → Run All as a user
// would, waits until every cell has run, then checks the rendered page (no
// error output, enough outputs, visible SVGs, expected texts) and saves a
// full-page screenshot. Run does all of it; TestNotebookWebUI runs it on
// the first lab notebook.
//
// The headless runner of package labs (nbclient) executes notebooks
// without a browser; this package covers what only the browser shows: the
// kernel starting from the notebook page, the UI's execution of every cell
// and how their outputs render.
package webui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/gomase/gomase/kernel/kernelspec"
	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/kernel/runner"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

const defaultJupyter = runner.DefaultJupyter

// Defaults of Options, and the screenshot's limit.
const (
	// DefaultKernelTimeout bounds the wait for an idle kernel.
	DefaultKernelTimeout = 3 * time.Minute
	// DefaultRunTimeout bounds Run All (quick-mode lab0 takes one to two
	// minutes on two cores).
	DefaultRunTimeout = 20 * time.Minute
	// DefaultWidth is the browser window's width in CSS pixels.
	DefaultWidth = 1280
	// MaxScreenshotHeight caps the full-page screenshot (CSS pixels); a
	// longer page is cut at the bottom.
	MaxScreenshotHeight = 30000
)

// viewportHeight is the browser window's height while the notebook runs.
const viewportHeight = 900

// Checks are what the executed notebook's page must show.
type Checks struct {
	// MinOutputs is the least number of rendered outputs (output areas)
	// on the page.
	MinOutputs int
	// MinSVGs is the least number of inline SVG images in outputs that
	// are laid out and draw something (non-empty bounding box).
	MinSVGs int
	// Texts must each appear in the text of the outputs.
	Texts []string
	// Widgets asks for at least one zoomable gomase widget (a graph drawn
	// by draw.Graph, say) whose script works in the notebook: its zoom-in
	// button, clicked, sets the zoom level to 125%.
	Widgets bool
}

// Options configure Run.
type Options struct {
	// Notebook is the .ipynb file to run; the server serves a temporary
	// copy, so the file itself is never changed.
	Notebook string
	// Root is the gomase repository root (GOMASE_ROOT for the kernel); found
	// from the working directory if empty (runner.Root).
	Root string
	// Scale is the notebook's scale (GOMASE_SCALE in the server's
	// environment, which its kernels inherit); scale.Default if empty.
	Scale scale.Scale
	// Kernel is the kernelspec the notebook must run with; kernelspec.Name
	// ("gomase") if empty.
	Kernel string
	// Jupyter is the jupyter command; runner.DefaultJupyter if empty.
	Jupyter string
	// Chromium is the browser binary; report.Chromium if empty.
	Chromium string
	// KernelTimeout bounds the wait for the kernel to be idle after the
	// page opens (DefaultKernelTimeout). Run's context bounds everything.
	KernelTimeout time.Duration
	// RunTimeout bounds Run All (DefaultRunTimeout).
	RunTimeout time.Duration
	// Width is the browser window's width in CSS pixels (DefaultWidth).
	Width int
	// Screenshot is where the full-page PNG is written, after the checks
	// and also when a step fails; none is written if empty.
	Screenshot string
	// ServerLog, when set, receives the server's whole log.
	ServerLog string
	// Checks are the page checks.
	Checks Checks
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() error {
	if o.Kernel == "" {
		o.Kernel = kernelspec.Name
	}
	if o.Jupyter == "" {
		o.Jupyter = defaultJupyter
	}
	if o.Chromium == "" {
		o.Chromium = report.Chromium
	}
	if o.KernelTimeout <= 0 {
		o.KernelTimeout = DefaultKernelTimeout
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = DefaultRunTimeout
	}
	if o.Width <= 0 {
		o.Width = DefaultWidth
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Root == "" {
		root, err := runner.Root()
		if err != nil {
			return err
		}
		o.Root = root
	}
	return nil
}

// SVG is an inline SVG image found in a cell's output.
type SVG struct {
	// Prompt is the execution count of its cell (the n of "In [n]").
	Prompt string
	// Width and Height are its laid-out size in CSS pixels.
	Width, Height float64
	// BBoxWidth and BBoxHeight are the size of its drawing's bounding box
	// (getBBox), in SVG user units.
	BBoxWidth, BBoxHeight float64
	// Shapes counts its shape and text elements.
	Shapes int
}

// Drawn reports whether the SVG is laid out and draws something.
func (s SVG) Drawn() bool {
	return s.Width > 0 && s.Height > 0 && s.BBoxWidth > 0 && s.BBoxHeight > 0
}

// Report is what Run saw.
type Report struct {
	// Notebook is the notebook run.
	Notebook string
	// Duration is Run's wall time.
	Duration time.Duration
	// RunDuration is the time from the Run All click until every cell had
	// finished.
	RunDuration time.Duration
	// CodeCells is the number of code cells on the page.
	CodeCells int
	// Executed is how many code cells have an execution count after Run
	// All.
	Executed int
	// Outputs is the number of rendered outputs.
	Outputs int
	// SVGs are the inline SVG images of the outputs.
	SVGs []SVG
	// RemoteRequests are the page's requests to non-loopback addresses
	// (any is a failure).
	RemoteRequests []string
	// FailedRequests are loopback requests that failed at the network
	// level (informational; an HTTP error status is not a failure here).
	FailedRequests []string
	// Exceptions are uncaught JavaScript exceptions on the page.
	Exceptions []string
	// Screenshot is the written PNG ("" if none).
	Screenshot string
	// ScreenshotSize is the PNG's size in pixels.
	ScreenshotSize image.Point
	// ServerLog is the written server log ("" if none).
	ServerLog string
}

// StepError is Run's error: the step that failed, why, the screenshot taken
// then and the last lines of the Jupyter server's log.
type StepError struct {
	// Step names what Run was doing ("start jupyter", "kernel ready",
	// "Cell menu: Run All", "run all cells", "check page", ...).
	Step string
	// Err is the cause.
	Err error
	// Screenshot is the PNG of the page when the step failed, or a note
	// saying why there is none.
	Screenshot string
	// ServerLog is the tail of the server's log ("" if it had not started).
	ServerLog string
	// LogFile is the path of the whole server log, if written.
	LogFile string
}

// Error names the step, the cause, the screenshot and the log tail.
func (e *StepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "webui: step %q failed: %v", e.Step, e.Err)
	if e.Screenshot != "" {
		fmt.Fprintf(&b, "\nscreenshot: %s", e.Screenshot)
	}
	if e.LogFile != "" {
		fmt.Fprintf(&b, "\njupyter notebook log: %s", e.LogFile)
	}
	if strings.TrimSpace(e.ServerLog) != "" {
		b.WriteString("\nlast lines of the jupyter notebook log:\n")
		for _, l := range strings.Split(strings.TrimRight(e.ServerLog, "\n"), "\n") {
			b.WriteString("    " + l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// setupHint ends errors that `make setup` fixes.
const setupHint = "run make setup"

// Run serves a copy of opts.Notebook with `jupyter notebook`, runs all its
// cells through the web UI in headless Chromium, checks the page against
// opts.Checks and writes the screenshot. On failure the error is a
// *StepError; the Report holds what was seen up to then. Everything Run
// starts (server, kernels, browser) is stopped before it returns.
func Run(ctx context.Context, opts Options) (rep *Report, err error) {
	start := time.Now()
	rep = &Report{Notebook: opts.Notebook}
	defer func() { rep.Duration = time.Since(start) }()
	var (
		srv  *Server
		page *rod.Page
	)
	fail := func(step string, cause error) error {
		se := &StepError{Step: step, Err: cause, LogFile: rep.ServerLog}
		if page != nil && opts.Screenshot != "" {
			// A fresh context: the step may have failed because ctx ended.
			if size, err := screenshot(page.Context(context.Background()).Timeout(time.Minute), opts.Screenshot, opts.Width); err != nil {
				se.Screenshot = fmt.Sprintf("(none: %v)", err)
			} else {
				rep.Screenshot, rep.ScreenshotSize = opts.Screenshot, size
				se.Screenshot = opts.Screenshot
			}
		} else if opts.Screenshot != "" {
			se.Screenshot = "(none: the page was not open)"
		}
		if srv != nil {
			se.ServerLog = srv.LogTail(30)
		}
		return se
	}

	if err := opts.defaults(); err != nil {
		return rep, fail("preflight", err)
	}
	if err := preflight(ctx, opts); err != nil {
		return rep, fail("preflight", err)
	}
	nb, err := notebook.ReadNotebook(opts.Notebook)
	if err != nil {
		return rep, fail("preflight", err)
	}
	if k := nb.KernelName(); k != opts.Kernel {
		return rep, fail("preflight", fmt.Errorf("%s asks for kernel %q in its metadata, not %q", opts.Notebook, k, opts.Kernel))
	}

	state, err := os.MkdirTemp("", "gomase-webui-")
	if err != nil {
		return rep, fail("preflight", err)
	}
	defer os.RemoveAll(state)
	served := filepath.Join(state, "notebooks")
	name := filepath.Base(opts.Notebook)
	if err := copyFile(opts.Notebook, filepath.Join(served, name)); err != nil {
		return rep, fail("preflight", err)
	}

	var logOut io.Writer
	if opts.ServerLog != "" {
		if err := os.MkdirAll(filepath.Dir(opts.ServerLog), 0o755); err != nil {
			return rep, fail("start jupyter", err)
		}
		f, err := os.Create(opts.ServerLog)
		if err != nil {
			return rep, fail("start jupyter", err)
		}
		defer f.Close()
		logOut = f
		rep.ServerLog = opts.ServerLog
	}
	opts.Logf("starting %s notebook (scale: %s) serving a copy of %s", opts.Jupyter, opts.Scale, opts.Notebook)
	srv, err = StartServer(ctx, ServerOptions{
		Jupyter:  opts.Jupyter,
		Dir:      served,
		StateDir: state,
		Env:      serverEnv(os.Environ(), opts.Root, opts.Scale),
		Log:      logOut,
	})
	if err != nil {
		return rep, fail("start jupyter", err)
	}
	defer func() {
		if stopErr := srv.Stop(); stopErr != nil && err == nil {
			err = fail("stop jupyter", stopErr)
		}
	}()
	opts.Logf("jupyter notebook answers on %s/api", srv.URL)
	specs, err := srv.KernelSpecs(ctx)
	if err != nil {
		return rep, fail("start jupyter", fmt.Errorf("listing kernelspecs: %w", err))
	}
	if !slices.Contains(specs, opts.Kernel) {
		return rep, fail("start jupyter", fmt.Errorf("the server does not know the kernel %q (it lists %v): %s", opts.Kernel, specs, setupHint))
	}

	launchCtx, cancelLaunch := context.WithTimeout(ctx, time.Minute)
	b, err := launchBrowser(launchCtx, opts.Chromium, filepath.Join(state, "chromium-profile"))
	cancelLaunch()
	if err != nil {
		return rep, fail("launch chromium", err)
	}
	defer b.close()
	if err := b.checkOffline(ctx); err != nil {
		return rep, fail("browser offline check", err)
	}

	page, err = b.rod.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		return rep, fail("open notebook", err)
	}
	pageCtx, cancelPage := context.WithCancel(ctx)
	defer cancelPage() // ends the event listeners
	page = page.Context(pageCtx)
	rec := newNetRecorder()
	defer func() {
		rep.RemoteRequests = rec.remoteRequests()
		rep.FailedRequests, rep.Exceptions = rec.problems()
	}()
	if err := rec.watch(page); err != nil {
		return rep, fail("open notebook", err)
	}
	if err := page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: opts.Width, Height: viewportHeight, DeviceScaleFactor: 1}); err != nil {
		return rep, fail("open notebook", err)
	}
	nbURL := srv.NotebookURL(name)
	opts.Logf("opening %s", redactToken(nbURL))
	if err := page.Timeout(2 * time.Minute).Navigate(nbURL); err != nil {
		return rep, fail("open notebook", err)
	}
	if err := page.Timeout(2 * time.Minute).WaitLoad(); err != nil {
		return rep, fail("open notebook", err)
	}

	wantName := ""
	if opts.Kernel == kernelspec.Name {
		wantName = kernelspec.DisplayName
	}
	st, err := waitKernelReady(ctx, page, opts.KernelTimeout, wantName)
	if err != nil {
		return rep, fail("kernel ready", err)
	}
	rep.CodeCells = len(st.Prompts)
	opts.Logf("kernel %q idle; %d code cells", st.Kernel, len(st.Prompts))

	if err := clickRunAll(page); err != nil {
		return rep, fail("Cell menu: Run All", err)
	}
	clicked := time.Now()
	opts.Logf("clicked Cell → Run All")
	st, err = waitAllRun(ctx, page, opts.RunTimeout, opts.Logf)
	rep.RunDuration = time.Since(clicked)
	if st != nil {
		rep.Executed = st.executed()
	}
	if err != nil {
		return rep, fail("run all cells", err)
	}
	opts.Logf("all cells finished in %s", rep.RunDuration.Round(time.Millisecond))

	pc, err := inspectPage(page)
	if err != nil {
		return rep, fail("check page", err)
	}
	rep.Outputs = pc.Outputs
	rep.SVGs = pc.svgs()
	problems := pc.problems(opts.Checks, st)
	if remote := rec.remoteRequests(); len(remote) > 0 {
		problems = append(problems, fmt.Sprintf("the page requested non-loopback addresses: %s", strings.Join(remote, ", ")))
	}
	if len(problems) > 0 {
		return rep, fail("check page", errors.New(strings.Join(problems, "\n  ")))
	}
	if opts.Checks.Widgets {
		if err := checkWidgetZoom(page); err != nil {
			return rep, fail("use a widget", err)
		}
		opts.Logf("a graph widget zooms in the notebook")
	}

	if opts.Screenshot != "" {
		size, err := screenshot(page, opts.Screenshot, opts.Width)
		if err != nil {
			return rep, fail("screenshot", err)
		}
		rep.Screenshot, rep.ScreenshotSize = opts.Screenshot, size
	}
	return rep, nil
}

// checkWidgetZoom clicks the zoom-in button of the page's first zoomable
// widget, as a user would, and checks that the widget's script answered.
func checkWidgetZoom(page *rod.Page) error {
	p := page.Timeout(30 * time.Second)
	has, _, err := p.Has(".gmw-zoom [data-gmw-action=zoom-in]")
	if err != nil {
		return err
	}
	if !has {
		return errors.New("no zoomable widget (.gmw-zoom) in the outputs")
	}
	btn, err := p.Element(".gmw-zoom [data-gmw-action=zoom-in]")
	if err != nil {
		return err
	}
	if err := btn.ScrollIntoView(); err != nil {
		return err
	}
	if err := btn.Click(proto.InputMouseButtonLeft, 1); err != nil {
		return fmt.Errorf("clicking zoom-in: %w", err)
	}
	var level string
	for i := 0; i < 20; i++ {
		if err := evalJSON(page, &level, `() => document.querySelector('.gmw-zoom .gmw-zoomlevel').textContent`); err != nil {
			return err
		}
		if level == "125%" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("after a click on zoom-in the widget shows %q, want 125%%: its script did not run in the notebook (window.gomaseWidgets unset?)", level)
}

// preflight checks that the programs and the kernelspec are installed.
func preflight(ctx context.Context, opts Options) error {
	for _, p := range []string{opts.Jupyter, opts.Chromium} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing: %s", p, setupHint)
		}
	}
	// The kernelspec is installed and serves this checkout.
	return runner.CheckKernel(ctx, runner.Options{Root: opts.Root, Kernel: opts.Kernel})
}

// serverEnv is the server's environment: what the headless runner gives
// its kernels (runner.NotebookEnv), since the server passes it on to them.
func serverEnv(env []string, root string, scale scale.Scale) []string {
	return runner.NotebookEnv(env, runner.Options{Root: root, Scale: scale})
}

// screenshot writes a PNG of the whole notebook to path: the window is
// made as tall as the notebook (the classic page scrolls inside #site, not
// the document), captured, and set back.
func screenshot(page *rod.Page, path string, width int) (image.Point, error) {
	var h float64
	if err := evalJSON(page, &h, `() => {
		const header = document.getElementById('header');
		const site = document.getElementById('site');
		const top = header ? header.getBoundingClientRect().height : 0;
		return Math.ceil(top + (site ? site.scrollHeight : document.documentElement.scrollHeight));
	}`); err != nil {
		return image.Point{}, fmt.Errorf("measuring the page: %w", err)
	}
	height := min(max(int(h), viewportHeight), MaxScreenshotHeight)
	if err := page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: width, Height: height, DeviceScaleFactor: 1}); err != nil {
		return image.Point{}, err
	}
	defer page.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: width, Height: viewportHeight, DeviceScaleFactor: 1})
	// Let the page handle the resize (it sizes #site to the window) and
	// paint: two animation frames, then a short pause.
	if _, err := page.Eval(`() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 300))))`); err != nil {
		return image.Point{}, err
	}
	shot, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(page)
	if err != nil {
		return image.Point{}, fmt.Errorf("capturing the page: %w", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot.Data))
	if err != nil {
		return image.Point{}, fmt.Errorf("the screenshot is not a PNG: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return image.Point{}, err
	}
	if err := os.WriteFile(path, shot.Data, 0o644); err != nil {
		return image.Point{}, err
	}
	return image.Pt(cfg.Width, cfg.Height), nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
