// Package runner runs the gomase lab notebooks headless through the "Go
// (gomase)" Jupyter kernel and has package report write a self-contained
// HTML report of each; `mase labs` is its command line.
//
// A run executes a notebook's cells in order with nbclient (Debian's
// /usr/bin/python3, installed by `make setup`) and the gomase kernelspec,
// stops at the first failing cell, writes the executed notebook and an
// offline HTML report, and reports the failing cell with its error.
//
// Notebooks size their work by scale.Current (quick for CI, standard by
// default on the CPU, full, the labs' own, by default on a GPU) and call
// Root to find the repository's files.
package runner

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/kernel/kernelspec"
	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
	"github.com/gomase/gomase/mase/limits"
)

// ModulePath is the module path of the gomase repository's go.mod.
const ModulePath = "github.com/gomase/gomase"

// RootEnv is the environment variable that names the repository root; the
// kernelspec sets it for notebooks.
const RootEnv = "GOMASE_ROOT"

// DefaultPython is the interpreter with nbclient (Debian's Jupyter).
const DefaultPython = "/usr/bin/python3"

// DefaultJupyter is Debian's jupyter command.
const DefaultJupyter = "/usr/bin/jupyter"

// DefaultCellTimeout bounds how long one cell may run.
const DefaultCellTimeout = 30 * time.Minute

//go:embed execute.py
var executePy []byte

var moduleLineRE = regexp.MustCompile(`(?m)^\s*module\s+"?([^"\s]+)"?\s*$`)

// isRoot reports whether dir holds the gomase go.mod.
func isRoot(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	m := moduleLineRE.FindSubmatch(data)
	return m != nil && string(m[1]) == ModulePath
}

// FindRoot walks up from dir to the directory whose go.mod declares module
// github.com/gomase/gomase (nested modules such as kernel/tools are passed
// over). When there is none it falls back to $GOMASE_ROOT.
func FindRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if isRoot(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if env := os.Getenv(RootEnv); env != "" {
		if isRoot(env) {
			return filepath.Abs(env)
		}
		return "", fmt.Errorf("%s=%s does not hold a go.mod with `module %s`", RootEnv, env, ModulePath)
	}
	return "", fmt.Errorf("cannot find the gomase repository: no go.mod with `module %s` in %s or its parents, and %s is not set", ModulePath, abs, RootEnv)
}

// Root returns the gomase repository root, searched from the working
// directory (see FindRoot). Inside the kernel, $GOMASE_ROOT points there.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return FindRoot(wd)
}

// Notebooks lists the lab notebooks of a repository: notebooks/*.ipynb,
// sorted.
func Notebooks(root string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(root, "notebooks", "*.ipynb"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no notebooks in %s (expected notebooks/*.ipynb)", filepath.Join(root, "notebooks"))
	}
	sort.Strings(paths)
	return paths, nil
}

// Options configure a run.
type Options struct {
	// OutDir receives <name>.ipynb (executed) and <name>.html (report);
	// "reports" if empty.
	OutDir string
	// Scale is what GOMASE_SCALE says to the notebooks; scale.Default if
	// empty.
	Scale scale.Scale
	// Root is the repository root; found from the working directory if empty.
	Root string
	// CellTimeout bounds each cell; DefaultCellTimeout if zero.
	CellTimeout time.Duration
	// Kernel is the kernelspec name; kernelspec.Name ("gomase") if empty.
	Kernel string
	// Python runs nbclient; DefaultPython if empty.
	Python string
	// Progress, when set, receives a line as each cell starts and ends.
	Progress io.Writer
	// Notices, when set, receives one-line notices: what was left by an
	// earlier run that was killed and is now ended.
	Notices io.Writer
	// AfterEach, when set, is called as each notebook finishes with the
	// results so far, the newest last; it may change that newest result
	// (a failed extra check, say), and Run returns what it left.
	AfterEach func(done []report.Result)
}

func (o *Options) defaults() error {
	if o.OutDir == "" {
		o.OutDir = "reports"
	}
	if o.CellTimeout <= 0 {
		o.CellTimeout = DefaultCellTimeout
	}
	if o.Scale == "" {
		o.Scale = scale.Default()
	}
	if o.Kernel == "" {
		o.Kernel = kernelspec.Name
	}
	if o.Python == "" {
		o.Python = DefaultPython
	}
	if o.Root == "" {
		root, err := Root()
		if err != nil {
			return err
		}
		o.Root = root
	}
	return nil
}

// setupHint ends errors that `make setup` fixes.
const setupHint = "run make setup"

// CheckKernel verifies that Jupyter and the gomase kernelspec are installed
// and that the kernelspec serves this checkout (its -go_work is opts.Root).
// Its errors end with "run make setup".
func CheckKernel(ctx context.Context, opts Options) error {
	if err := opts.defaults(); err != nil {
		return err
	}
	if _, err := os.Stat(DefaultJupyter); err != nil {
		return fmt.Errorf("no Jupyter here (%s is missing): %s", DefaultJupyter, setupHint)
	}
	wd, err := newWorkDir()
	if err != nil {
		return err
	}
	defer wd.Close()
	script, err := writeDriver(wd.Path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, opts.Python, script, "--check", opts.Kernel)
	cmd.Env = runEnv(os.Environ(), wd.Path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 3 {
		return fmt.Errorf("the Jupyter kernel %q is not installed (not in `jupyter kernelspec list`): %s", opts.Kernel, setupHint)
	}
	if err != nil {
		return fmt.Errorf("cannot query Jupyter's kernelspecs with %s (%v; %s): %s", opts.Python, err, notebook.LastLines(stderr.String(), 3), setupHint)
	}
	var spec struct {
		ResourceDir string   `json:"resource_dir"`
		Argv        []string `json:"argv"`
	}
	if err := json.Unmarshal(lastLine(out), &spec); err != nil {
		return fmt.Errorf("unexpected answer from the kernelspec query %q: %v", out, err)
	}
	if len(spec.Argv) == 0 {
		return fmt.Errorf("kernelspec %q in %s has an empty argv: %s", opts.Kernel, spec.ResourceDir, setupHint)
	}
	if _, err := os.Stat(spec.Argv[0]); err != nil {
		return fmt.Errorf("kernelspec %q starts %s, which is missing: %s", opts.Kernel, spec.Argv[0], setupHint)
	}
	if opts.Kernel == kernelspec.Name {
		ks := kernelspec.Spec{Argv: spec.Argv}
		if !sameDir(ks.GoWork(), opts.Root) {
			return fmt.Errorf("kernelspec %q serves the checkout %q (-go_work), not this one (%s): %s", opts.Kernel, ks.GoWork(), opts.Root, setupHint)
		}
	}
	return nil
}

func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// Run checks every notebook (LoadNotebook) and the output folder, ends
// what runs killed earlier left behind (SweepLeftovers), checks the
// kernel, then runs each notebook in turn (all of them, even after a
// failure, until ctx is done). The error is for problems that stop every
// run (a bad notebook, no kernel, bad options), returned before any
// notebook runs; each notebook's outcome is in its report.Result. When ctx
// is cancelled the notebook running is stopped (its result is an
// *Interrupted) and the ones after it are not started.
func Run(ctx context.Context, notebooks []string, opts Options) ([]report.Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, nb := range notebooks {
		name := notebook.Name(nb)
		if prev, dup := seen[name]; dup {
			return nil, fmt.Errorf("notebooks %s and %s would both write %s.html in %s; run them separately with different --out", prev, nb, name, opts.OutDir)
		}
		seen[name] = nb
		if !strings.HasSuffix(nb, ".ipynb") {
			return nil, fmt.Errorf("%s is not a notebook (expected a .ipynb file)", nb)
		}
		if _, err := LoadNotebook(nb); err != nil {
			return nil, err
		}
	}
	if err := checkOutputs(notebooks, opts.OutDir); err != nil {
		return nil, err
	}
	if err := CheckOutputFolder("--out", opts.OutDir); err != nil {
		return nil, err
	}
	if swept := SweepLeftovers(); swept.String() != "" && opts.Notices != nil {
		fmt.Fprintln(opts.Notices, "mase labs: "+swept.String())
	}
	if err := CheckKernel(ctx, opts); err != nil {
		return nil, err
	}
	var results []report.Result
	for _, nb := range notebooks {
		if ctx.Err() != nil {
			break
		}
		results = append(results, RunNotebook(ctx, nb, opts))
		if opts.AfterEach != nil {
			opts.AfterEach(results)
		}
	}
	return results, nil
}

// driverStatus is execute.py's last stdout line.
type driverStatus struct {
	Status  string `json:"status"`
	Cell    int    `json:"cell"`
	Message string `json:"message"`
}

// Interrupted is the failure of a notebook whose run was stopped before it
// finished (SIGINT, SIGTERM: its context was cancelled). The kernel and
// every process of the run were stopped.
type Interrupted struct {
	// Cause is why the run stopped (context.Cause of its context).
	Cause error
	// Cell is the 1-based index of the cell that was running, 0 if none.
	Cell int
	// CellName names that cell: "cell 3 (In [2], id x) `first line`".
	CellName string
}

func (e *Interrupted) Error() string {
	why := "interrupted"
	if e.Cause != nil && !errors.Is(e.Cause, context.Canceled) {
		why = e.Cause.Error()
	}
	if e.CellName == "" {
		return why + " before a cell ran; the kernel was stopped"
	}
	return why + " while " + e.CellName + " ran; the kernel and the cell's processes were stopped"
}

// Unwrap returns the cause.
func (e *Interrupted) Unwrap() error { return e.Cause }

// cellName names cell i (1-based) of nb for a message, "" when there is none.
func cellName(nb *notebook.Notebook, i int) string {
	if nb == nil || i < 1 || i > len(nb.Cells) {
		return ""
	}
	c := &nb.Cells[i-1]
	name := fmt.Sprintf("cell %d", i)
	var tags []string
	if c.Execution != nil && *c.Execution > 0 {
		tags = append(tags, fmt.Sprintf("In [%d]", *c.Execution))
	}
	if c.ID != "" {
		tags = append(tags, "id "+c.ID)
	}
	if len(tags) > 0 {
		name += " (" + strings.Join(tags, ", ") + ")"
	}
	if line := []rune(notebook.FirstLine(string(c.Source))); len(line) > 0 {
		if len(line) > 80 {
			line = append(line[:77], []rune("...")...)
		}
		name += " `" + string(line) + "`"
	}
	return name
}

// runningCellRE matches execute.py's progress line as a cell starts.
var runningCellRE = regexp.MustCompile(`(?m)^cell (\d+)/\d+ running$`)

// lastRunningCell is the 1-based index of the last cell execute.py said it
// started, 0 if none.
func lastRunningCell(progress string) int {
	m := runningCellRE.FindAllStringSubmatch(progress, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(m[len(m)-1][1])
	return n
}

// RunNotebook executes one notebook and writes its executed copy and HTML
// report into opts.OutDir. It does not check the kernel (see CheckKernel).
//
// The driver and everything it starts run with TMPDIR and RunEnv set to a
// work folder of their own, in their own process group, and the driver
// gets SIGTERM if this process dies (PR_SET_PDEATHSIG). When ctx is
// cancelled the driver is sent SIGTERM (nbclient shuts the kernel down);
// whatever is left of the run afterwards, the kernel, gopls or a cell's
// program, is stopped, and the work folder removed, before RunNotebook
// returns.
func RunNotebook(ctx context.Context, path string, opts Options) report.Result {
	start := time.Now()
	res := report.Result{Notebook: path, Name: notebook.Name(path)}
	finish := func(err error) report.Result {
		res.Err = err
		res.Duration = time.Since(start)
		return res
	}
	if err := opts.defaults(); err != nil {
		return finish(err)
	}
	if !strings.HasSuffix(path, ".ipynb") {
		return finish(fmt.Errorf("%s is not a notebook (expected a .ipynb file)", path))
	}
	src, err := filepath.Abs(path)
	if err != nil {
		return finish(err)
	}
	input, err := LoadNotebook(src)
	if err != nil {
		return finish(err)
	}
	executed := filepath.Join(opts.OutDir, res.Name+".ipynb")
	if absExec, err := filepath.Abs(executed); err == nil && absExec == src {
		return finish(fmt.Errorf("--out %s would overwrite the notebook %s itself; choose another output directory", opts.OutDir, path))
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return finish(err)
	}
	wd, err := newWorkDir()
	if err != nil {
		return finish(err)
	}
	defer func() {
		if left := wd.Close(); len(left) > 0 && opts.Notices != nil {
			fmt.Fprintf(opts.Notices, "mase labs: %s: processes %v of the run would not die\n", res.Name, left)
		}
	}()
	script, err := writeDriver(wd.Path)
	if err != nil {
		return finish(err)
	}
	// The driver writes the executed notebook in the work folder; it is
	// moved into opts.OutDir whole once the driver is done.
	draft := filepath.Join(wd.Path, "executed.ipynb")

	cmd := exec.CommandContext(ctx, opts.Python, script, src, draft, opts.Kernel,
		fmt.Sprint(int(opts.CellTimeout.Seconds())), filepath.Dir(src))
	cmd.Env = runEnv(NotebookEnv(os.Environ(), opts), wd.Path)
	// Its own process group: a Ctrl-C at the terminal reaches this process,
	// which stops the driver; Pdeathsig: the driver stops the kernel when
	// this process dies without doing so.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // nbclient shuts the kernel down
	cmd.WaitDelay = 15 * time.Second
	var stdout bytes.Buffer
	stderr := NewLineTail(200)
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if opts.Progress != nil {
		cmd.Stderr = io.MultiWriter(stderr, &prefixWriter{w: opts.Progress, prefix: res.Name + ": "})
	}
	runErr := runOwned(cmd)
	if ctx.Err() != nil {
		// Stop what is left now, before the report is written.
		endMarked(wd.Path)
	}

	var st driverStatus
	if line := lastLine(stdout.Bytes()); len(line) > 0 {
		_ = json.Unmarshal(line, &st)
	}
	out, saveErr := saveExecuted(draft, executed)
	if out != nil && saveErr == nil {
		res.Executed = executed
	}
	var failure error
	switch {
	case st.Status == "ok":
		// A cell tagged raises-exception may have failed; that is fine.
	case ctx.Err() != nil:
		nb := out
		if nb == nil {
			nb = input
		}
		cell := st.Cell
		if cell == 0 {
			cell = lastRunningCell(stderr.String())
		}
		failure = &Interrupted{Cause: context.Cause(ctx), Cell: cell, CellName: cellName(nb, cell)}
	case st.Status == "cell_error" && out != nil && notebook.FirstError(out) != nil:
		failure = notebook.FirstError(out)
	case st.Status == "cell_error" || st.Status == "timeout" || st.Status == "dead_kernel":
		nb := out
		if nb == nil {
			nb = input
		}
		ce := &notebook.CellError{Index: st.Cell, EValue: st.Message}
		if st.Cell >= 1 && st.Cell <= len(nb.Cells) {
			c := &nb.Cells[st.Cell-1]
			ce = notebook.CellFailure(c, st.Cell-1)
		}
		switch st.Status {
		case "timeout":
			ce.Kind = "timeout"
			ce.EValue = fmt.Sprintf("no result after %s (the per-cell limit; raise it with --timeout)", opts.CellTimeout)
		case "dead_kernel":
			ce.Kind = "dead kernel"
			ce.EValue = "the kernel process exited while running this cell; GoNB's log is gonb.log in the kernelspec directory (`jupyter kernelspec list`)"
		default:
			ce.Kind = "error"
			ce.EValue = notebook.StripANSI(st.Message)
		}
		failure = ce
	case st.Status == "error":
		failure = fmt.Errorf("could not run the notebook with kernel %q: %s", opts.Kernel, strings.TrimSpace(notebook.StripANSI(st.Message)))
	default:
		failure = fmt.Errorf("the notebook runner (%s) failed: %v\n%s", opts.Python, runErr, notebook.LastLines(stderr.String(), 15))
	}
	if saveErr != nil {
		failure = errors.Join(failure, saveErr)
	}

	// The report shows the executed notebook, or the input when execution
	// wrote nothing.
	shown := out
	if shown == nil {
		shown = input
	}
	info := report.Info{
		Name:      filepath.Base(path),
		Err:       failure,
		Duration:  time.Since(start),
		Scale:     opts.Scale,
		Backend:   scale.BackendName(),
		Generated: time.Now(),
		BaseDir:   filepath.Dir(src),
	}
	var ce *notebook.CellError
	var stopped *Interrupted
	switch {
	case errors.As(failure, &ce):
		info.FailedCell = ce.Index
	case errors.As(failure, &stopped):
		info.FailedCell = stopped.Cell
	}
	reportPath := filepath.Join(opts.OutDir, res.Name+".html")
	if err := report.Write(reportPath, shown, info); err != nil {
		failure = errors.Join(failure, fmt.Errorf("HTML report: %w", err))
	} else {
		res.Report = reportPath
	}
	return finish(failure)
}

// saveExecuted moves the executed notebook the driver wrote at draft to
// dst, whole (atomicfile): dst is replaced only by a complete notebook,
// and removed when the driver wrote none, or one cut short (it would not
// match the new report). It returns the notebook, nil when there is none.
func saveExecuted(draft, dst string) (*notebook.Notebook, error) {
	data, err := limits.ReadFile(draft, executedNotebook)
	if err != nil {
		os.Remove(dst)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("executed notebook not saved: %w", err)
	}
	nb, err := notebook.ParseNotebook(data)
	if err != nil {
		os.Remove(dst) // the driver was stopped while it wrote it
		return nil, nil
	}
	if err := atomicfile.Write(atomicfile.File{Path: dst, Data: data}); err != nil {
		return nb, fmt.Errorf("executed notebook: %w", err)
	}
	return nb, nil
}

// runOwned runs cmd from a goroutine locked to its OS thread:
// PR_SET_PDEATHSIG fires when the thread that started the child exits,
// and a locked thread lives until the child has been waited for.
func runOwned(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		done <- cmd.Wait()
	}()
	return <-done
}

// SetEnv returns a copy of env (KEY=VALUE entries) with key set to value
// and every earlier setting of key removed (a child process reading the
// first of two settings would miss the new one).
func SetEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// NotebookEnv returns env as the kernels of a run need it:
// GOMASE_SCALE=opts.Scale (scale.Default when empty; GOMASE_QUICK
// removed), GOMASE_ROOT=opts.Root, and Debian's debugpy warning about
// frozen modules turned off. Whatever starts the kernels (the headless
// runner, a Jupyter server) gets this environment.
func NotebookEnv(env []string, opts Options) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, scale.QuickEnv+"=") || strings.HasPrefix(kv, scale.Env+"=") || strings.HasPrefix(kv, RootEnv+"=") {
			continue
		}
		out = append(out, kv)
	}
	sc := opts.Scale
	if sc == "" {
		sc = scale.Default()
	}
	out = append(out, scale.Env+"="+string(sc), RootEnv+"="+opts.Root, "PYDEVD_DISABLE_FILE_VALIDATION=1")
	return out
}

// labsDirEnv names the folder where the notebooks chain their checkpoints
// (labsetup.CheckpointDir): ~/gomase-labs, or $TMPDIR/gomase-labs where
// there is no home folder.
const labsDirEnv = "GOMASE_LABS_DIR"

// runEnv is env for the processes of a run in the work folder dir: RunEnv
// and TMPDIR name dir, so that whatever they leave is in it. Without a
// home folder the checkpoints stay in the TMPDIR of before, which outlives
// the run.
func runEnv(env []string, dir string) []string {
	if _, err := os.UserHomeDir(); err != nil && os.Getenv(labsDirEnv) == "" {
		env = SetEnv(env, labsDirEnv, filepath.Join(os.TempDir(), "gomase-labs"))
	}
	return SetEnv(SetEnv(env, RunEnv, dir), "TMPDIR", dir)
}

// writeDriver writes execute.py into dir and returns its path.
func writeDriver(dir string) (string, error) {
	path := filepath.Join(dir, "execute.py")
	if err := os.WriteFile(path, executePy, 0o644); err != nil {
		return "", fmt.Errorf("writing the notebook driver: %w", err)
	}
	return path, nil
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return bytes.TrimSpace(lines[len(lines)-1])
}

// prefixWriter writes each complete line with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    bytes.Buffer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	sc := bufio.NewReader(&p.buf)
	for {
		line, err := sc.ReadString('\n')
		if err != nil {
			p.buf.Reset()
			p.buf.WriteString(line)
			break
		}
		if _, err := io.WriteString(p.w, p.prefix+line); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}
