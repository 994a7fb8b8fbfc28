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
	"regexp"
	"slices"
	"strconv"
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

// pageState is what the notebook page shows of the kernel and the cells.
type pageState struct {
	Loaded    bool     `json:"loaded"`
	Connected bool     `json:"connected"`
	Icon      string   `json:"icon"`
	Kernel    string   `json:"kernel"`
	Prompts   []string `json:"prompts"`
	Running   int      `json:"running"`
	Dialogs   []string `json:"dialogs"`
}

const pageStateJS = `() => {
	const nb = window.Jupyter && window.Jupyter.notebook;
	const k = nb && nb.kernel;
	const icon = document.getElementById('kernel_indicator_icon');
	const name = document.querySelector('#kernel_indicator .kernel_indicator_name');
	const cells = Array.from(document.querySelectorAll('#notebook-container .cell.code_cell'));
	const text = e => e ? (e.textContent || '').replace(/\s+/g, ' ').trim() : '';
	return {
		loaded: !!(nb && nb._fully_loaded),
		connected: !!(k && typeof k.is_connected === 'function' && k.is_connected()),
		icon: icon ? icon.className : '',
		kernel: text(name),
		prompts: cells.map(c => text(c.querySelector('.input_prompt'))),
		running: cells.filter(c => c.classList.contains('running')).length,
		dialogs: Array.from(document.querySelectorAll('.modal.in')).map(m =>
			(text(m.querySelector('.modal-title')) + ': ' + text(m.querySelector('.modal-body'))).slice(0, 400)),
	};
}`

var promptRE = regexp.MustCompile(`^In \[(\d+|\*|)\]:?$`)

// prompt returns the execution count of a prompt text: n for "In [n]:",
// "*" for a running or queued cell, "" for a cell never run.
func prompt(text string) string {
	m := promptRE.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return "?" + text
	}
	return m[1]
}

func (s *pageState) executed() int {
	n := 0
	for _, p := range s.Prompts {
		if _, err := strconv.Atoi(prompt(p)); err == nil {
			n++
		}
	}
	return n
}

func (s *pageState) queued() int {
	n := 0
	for _, p := range s.Prompts {
		if prompt(p) == "*" {
			n++
		}
	}
	return n
}

func (s *pageState) idle() bool { return strings.Contains(s.Icon, "kernel_idle_icon") }
func (s *pageState) dead() bool { return strings.Contains(s.Icon, "kernel_dead_icon") }

func (s *pageState) String() string {
	return fmt.Sprintf("notebook loaded: %v, kernel %q connected: %v, indicator: %q, prompts: %v, running cells: %d, dialogs: %q",
		s.Loaded, s.Kernel, s.Connected, s.Icon, s.Prompts, s.Running, s.Dialogs)
}

func readState(page *rod.Page) (*pageState, error) {
	var st pageState
	if err := evalJSON(page, &st, pageStateJS); err != nil {
		return nil, err
	}
	return &st, nil
}

// waitKernelReady waits until the notebook has loaded, its kernel is
// connected and the indicator shows it idle, with the expected name (if
// wantName is not "").
func waitKernelReady(ctx context.Context, page *rod.Page, timeout time.Duration, wantName string) (*pageState, error) {
	deadline := time.Now().Add(timeout)
	var last *pageState
	var lastErr error
	for {
		st, err := readState(page.Timeout(30 * time.Second))
		if err != nil {
			lastErr = err
		} else {
			last = st
			if len(st.Dialogs) > 0 {
				return st, fmt.Errorf("the page shows a dialog instead of a running kernel: %q", st.Dialogs)
			}
			if st.dead() {
				return st, fmt.Errorf("the kernel indicator says the kernel is dead (%s)", st)
			}
			if st.Loaded && st.Connected && st.idle() && (wantName == "" || st.Kernel == wantName) {
				return st, nil
			}
		}
		if err := sleepUntil(ctx, deadline, timeout, 250*time.Millisecond); err != nil {
			if last == nil {
				return nil, fmt.Errorf("the kernel was not ready %s (last page state unreadable: %v)", err, lastErr)
			}
			want := ""
			if wantName != "" {
				want = fmt.Sprintf(" named %q", wantName)
			}
			return last, fmt.Errorf("no idle kernel%s %s; last state: %s", want, err, last)
		}
	}
}

// clickRunAll opens the Cell menu and clicks its Run All item, with the
// mouse, as a user would.
func clickRunAll(page *rod.Page) error {
	p := page.Timeout(30 * time.Second)
	menu, err := p.Element("#menus #celllink")
	if err != nil {
		return fmt.Errorf("no Cell menu (#menus #celllink) on the page: %w", err)
	}
	if err := menu.Click(proto.InputMouseButtonLeft, 1); err != nil {
		return fmt.Errorf("clicking the Cell menu: %w", err)
	}
	item, err := p.Element("#cell_menu #run_all_cells > a")
	if err != nil {
		return fmt.Errorf("no Run All item (#run_all_cells) in the Cell menu: %w", err)
	}
	if err := item.WaitVisible(); err != nil {
		return fmt.Errorf("the Cell menu did not open (Run All is not visible): %w", err)
	}
	if err := item.Click(proto.InputMouseButtonLeft, 1); err != nil {
		return fmt.Errorf("clicking Cell → Run All: %w", err)
	}
	return nil
}

// waitAllRun waits until Run All has started and then finished: no cell
// queued or running ("In [*]"), the kernel idle, on two reads a second
// apart. It logs each cell as it finishes.
func waitAllRun(ctx context.Context, page *rod.Page, timeout time.Duration, logf func(string, ...any)) (*pageState, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	started := false
	settled := 0
	lastExecuted := -1
	var last *pageState
	for {
		st, err := readState(page.Timeout(30 * time.Second))
		if err == nil {
			last = st
			if len(st.Dialogs) > 0 {
				return st, fmt.Errorf("the page shows a dialog: %q", st.Dialogs)
			}
			if st.dead() {
				return st, fmt.Errorf("the kernel died while running the cells (%s)", st)
			}
			if !started && (st.queued() > 0 || st.Running > 0 || !st.idle()) {
				started = true
			}
			if n := st.executed(); n != lastExecuted && started {
				lastExecuted = n
				logf("%s: %d of %d code cells done, %d queued or running", time.Since(start).Round(time.Second), n, len(st.Prompts), st.queued())
			}
			if started && st.queued() == 0 && st.Running == 0 && st.idle() {
				settled++
				if settled >= 2 {
					return st, nil
				}
			} else {
				settled = 0
			}
			if !started && time.Since(start) > time.Minute {
				return st, fmt.Errorf("Run All did not start any cell within a minute (state: %s)", st)
			}
		}
		if err := sleepUntil(ctx, deadline, timeout, time.Second); err != nil {
			if last == nil {
				return nil, fmt.Errorf("cells still running %s", err)
			}
			return last, fmt.Errorf("cells still running %s: %d of %d done; state: %s", err, last.executed(), len(last.Prompts), last)
		}
	}
}

// sleepUntil sleeps d, or returns an error that completes "... <what>"
// when the step's deadline (timeout from its start) passes or ctx ends.
func sleepUntil(ctx context.Context, deadline time.Time, timeout, d time.Duration) error {
	if time.Now().After(deadline) {
		return fmt.Errorf("within %s (the step's timeout)", timeout)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("when the run was stopped (%v)", context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

// cellReport is what inspectPage finds in one code cell.
type cellReport struct {
	Prompt  string   `json:"prompt"`
	Source  string   `json:"source"`
	Empty   bool     `json:"empty"`
	Outputs int      `json:"outputs"`
	Errors  []string `json:"errors"`
	SVGs    []struct {
		W      float64 `json:"w"`
		H      float64 `json:"h"`
		BW     float64 `json:"bw"`
		BH     float64 `json:"bh"`
		Shapes int     `json:"shapes"`
	} `json:"svgs"`
}

// pageCheck is what inspectPage finds on the page.
type pageCheck struct {
	Cells   []cellReport `json:"cells"`
	Outputs int          `json:"outputs"`
	Text    string       `json:"text"`
}

// inspectJS collects, per code cell: its prompt, the first line of its
// source, its number of outputs, its error outputs (the notebook's
// .output_error, which GoNB's --raw_error errors and panics render as;
// GoNB's HTML error report, recognised by its gonb-err-* classes and its
// stderr-typed block; a "panic:" or "fatal error:" line in stderr), and
// the boxes of its outermost inline SVGs; and the text of all outputs.
const inspectJS = `() => {
	const text = e => (e.innerText || e.textContent || '').trim();
	const cells = Array.from(document.querySelectorAll('#notebook-container .cell.code_cell')).map(c => {
		const p = c.querySelector('.input_prompt');
		const cm = c.querySelector('.CodeMirror');
		const src = cm && cm.CodeMirror ? cm.CodeMirror.getValue() : '';
		const errors = [];
		c.querySelectorAll('.output_area .output_error').forEach(e => errors.push(text(e)));
		c.querySelectorAll('.output_area .output_subarea').forEach(sub => {
			if (sub.querySelector('[class^="gonb-err"], [class*=" gonb-err"], [data-mime-type="application/vnd.jupyter.stderr"]')) {
				errors.push('GoNB error report: ' + text(sub));
			}
		});
		c.querySelectorAll('.output_area .output_stderr').forEach(e => {
			const t = text(e);
			if (/^(panic|fatal error): /m.test(t)) errors.push('stderr: ' + t);
		});
		const svgs = Array.from(c.querySelectorAll('.output_area svg'))
			.filter(s => !(s.parentElement && s.parentElement.closest('svg')))
			.map(s => {
				const r = s.getBoundingClientRect();
				let b = {width: 0, height: 0};
				try { b = s.getBBox(); } catch (e) {}
				return {w: r.width, h: r.height, bw: b.width, bh: b.height,
					shapes: s.querySelectorAll('path, polygon, polyline, rect, ellipse, circle, line, text, image').length};
			});
		return {
			prompt: p ? p.textContent.replace(/\s+/g, ' ').trim() : '',
			empty: src.trim() === '',
			source: src.split('\n').map(l => l.trim()).find(l => l && l !== '%%' && !l.startsWith('//')) || '',
			outputs: c.querySelectorAll('.output_area').length,
			errors: errors.map(e => e.slice(0, 2000)),
			svgs,
		};
	});
	const outs = Array.from(document.querySelectorAll('#notebook-container .output_area'));
	return {cells, outputs: outs.length, text: outs.map(text).join('\n')};
}`

func inspectPage(page *rod.Page) (*pageCheck, error) {
	var pc pageCheck
	if err := evalJSON(page.Timeout(time.Minute), &pc, inspectJS); err != nil {
		return nil, err
	}
	return &pc, nil
}

func (pc *pageCheck) svgs() []SVG {
	var out []SVG
	for _, c := range pc.Cells {
		for _, s := range c.SVGs {
			out = append(out, SVG{Prompt: prompt(c.Prompt), Width: s.W, Height: s.H, BBoxWidth: s.BW, BBoxHeight: s.BH, Shapes: s.Shapes})
		}
	}
	return out
}

// problems lists what fails the checks.
func (pc *pageCheck) problems(checks Checks, st *pageState) []string {
	var out []string
	cellName := func(i int, c cellReport) string {
		name := fmt.Sprintf("code cell %d (In [%s])", i+1, prompt(c.Prompt))
		if c.Source != "" {
			name += " `" + truncate(c.Source, 60) + "`"
		}
		return name
	}
	for i, c := range pc.Cells {
		if len(c.Errors) > 0 {
			text := strings.Join(c.Errors, "\n")
			out = append(out, fmt.Sprintf("%s shows an error:\n    %s", cellName(i, c), strings.ReplaceAll(text, "\n", "\n    ")))
		}
		if _, err := strconv.Atoi(prompt(c.Prompt)); err != nil && !c.Empty {
			out = append(out, fmt.Sprintf("%s did not run (prompt %q)", cellName(i, c), c.Prompt))
		}
	}
	if pc.Outputs < checks.MinOutputs {
		out = append(out, fmt.Sprintf("the page shows %d outputs, want at least %d", pc.Outputs, checks.MinOutputs))
	}
	drawn := 0
	for _, s := range pc.svgs() {
		if s.Drawn() {
			drawn++
		} else {
			out = append(out, fmt.Sprintf("an SVG of In [%s] draws nothing: laid out %.0fx%.0f, bounding box %.0fx%.0f", s.Prompt, s.Width, s.Height, s.BBoxWidth, s.BBoxHeight))
		}
	}
	if drawn < checks.MinSVGs {
		out = append(out, fmt.Sprintf("the page shows %d drawn inline SVGs, want at least %d", drawn, checks.MinSVGs))
	}
	for _, t := range checks.Texts {
		if !strings.Contains(pc.Text, t) {
			out = append(out, fmt.Sprintf("no output contains %q", t))
		}
	}
	if st != nil && !st.idle() {
		out = append(out, fmt.Sprintf("the kernel is not idle at the end (indicator %q)", st.Icon))
	}
	return out
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
