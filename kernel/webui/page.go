package webui

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

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
