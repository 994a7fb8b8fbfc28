package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/notebook"
	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

// requireKernel fails the test (it never skips: CI runs `make setup` before
// `go test`) when Jupyter or the gomase kernelspec is missing.
func requireKernel(t *testing.T) Options {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Root: root, OutDir: t.TempDir(), CellTimeout: 5 * time.Minute}
	if err := CheckKernel(context.Background(), opts); err != nil {
		t.Fatalf("the gomase kernel is not usable: %v", err)
	}
	return opts
}

// TestEndToEndSVG runs a real notebook through the gomase kernel: GoNB
// compiles a cell that displays an SVG with gonbui, and a cell that imports
// this package through the kernel's go.work; the report must show the SVG
// in headless Chromium with the network off.
func TestEndToEndSVG(t *testing.T) {
	opts := requireKernel(t)
	opts.Scale = scale.Quick
	results, err := Run(context.Background(), []string{filepath.Join("testdata", "e2e_svg.ipynb")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if !r.OK() {
		t.Fatalf("e2e_svg.ipynb failed: %v", r.Err)
	}
	t.Logf("e2e_svg.ipynb ran in %s", r.Duration.Round(time.Millisecond))
	nb, err := notebook.ReadNotebook(r.Executed)
	if err != nil {
		t.Fatal(err)
	}
	svg, ok := nb.Cells[1].Outputs[0].Data.Text("text/html")
	if !ok || !strings.Contains(svg, `fill="#e0157a"`) {
		t.Errorf("the DisplaySvg cell's output is %+v, want text/html with the SVG", nb.Cells[1].Outputs)
	}
	if out := string(nb.Cells[2].Outputs[0].Text); !strings.Contains(out, "quick: true") {
		t.Errorf("scale.IsQuick() printed %q in the notebook, want quick: true (GOMASE_SCALE=quick must reach the kernel)", out)
	}
	page, err := os.ReadFile(r.Report)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.CheckOffline(string(page)); err != nil {
		t.Error(err)
	}
	if err := report.CheckSVGVisible(r.Report); err != nil {
		t.Errorf("the report's SVG is not visible in Chromium: %v", err)
	}
}

// TestEndToEndFailures runs notebooks whose cell fails to compile or
// panics, and checks the runner names the cell, its first line and the error.
func TestEndToEndFailures(t *testing.T) {
	opts := requireKernel(t)
	results, err := Run(context.Background(), []string{
		filepath.Join("testdata", "e2e_compile_error.ipynb"),
		filepath.Join("testdata", "e2e_panic.ipynb"),
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"cell 3 (In [2], id broken) `fmt.Println(undefinedThing)` failed", "undefined: undefinedThing", "Cell[2]: Line 2"},
		{"cell 1 (In [1], id boom) `func boom() { panic(\"gomase-e2e-boom\") }` failed", "panic: gomase-e2e-boom (exit status 2)", "main.boom"},
	}
	// GoNB usually maps the panic's stack lines to cells ("[[ Cell [1] Line
	// 1 ]]") but not always (seen once in CI: plain main.go lines), so the
	// test asks only for the panicking function in the stack.
	for i, r := range results {
		var ce *notebook.CellError
		if !errors.As(r.Err, &ce) {
			t.Errorf("%s: error %v, want a *CellError", r.Name, r.Err)
			continue
		}
		for _, w := range want[i] {
			if !strings.Contains(ce.Error(), w) {
				t.Errorf("%s: error lacks %q:\n%v", r.Name, w, ce)
			}
		}
		if r.Report == "" || r.Executed == "" {
			t.Errorf("%s: report %q, executed %q: both must be written for a failed notebook", r.Name, r.Report, r.Executed)
		}
	}
	// The runner stops at the failing cell: the cell after it never ran.
	nb, err := notebook.ReadNotebook(results[0].Executed)
	if err != nil {
		t.Fatal(err)
	}
	if last := nb.Cells[3]; last.Execution != nil || len(last.Outputs) > 0 {
		t.Errorf("the cell after the failure ran: %+v", last)
	}
	if got := string(nb.Cells[1].Outputs[0].Text); got != "first cell runs\n" {
		t.Errorf("first code cell printed %q", got)
	}
}

// markedUnder lists the processes whose RunEnv names a folder in dir.
func markedUnder(dir string) []int {
	var pids []int
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range environs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if strings.HasPrefix(kv, RunEnv+"="+dir+string(filepath.Separator)) {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && Alive(pid) {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// lineWatch is an io.Writer that closes seen once a line holding want
// has been written.
type lineWatch struct {
	mu   sync.Mutex
	want string
	buf  strings.Builder
	seen chan struct{}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

// TestEndToEndInterrupt stops a run while its cell's program spins (its
// context cancelled, as SIGTERM and SIGINT do in mase labs): RunNotebook
// returns within seconds with an *Interrupted naming the cause and the
// cell, the report says so (not "the kernel died"), and no process of the
// run (kernel, gopls, the cell's program) and nothing in TMPDIR is left.
func TestEndToEndInterrupt(t *testing.T) {
	opts := requireKernel(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	watch := &lineWatch{want: "cell 2/2 running", seen: make(chan struct{})}
	opts.Progress = watch
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stopped := make(chan time.Time, 1)
	go func() {
		select {
		case <-watch.seen:
		case <-time.After(3 * time.Minute):
		}
		// Wait for the cell's program (GoNB's gonb_* binary) to spin.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if cellProgramRuns(tmp) {
				break
			}
		}
		stopped <- time.Now()
		cancel(errors.New("interrupted by SIGTERM"))
	}()
	r := RunNotebook(ctx, filepath.Join("testdata", "e2e_forever.ipynb"), opts)
	at := <-stopped
	if took := time.Since(at); took > 30*time.Second {
		t.Errorf("RunNotebook returned %s after the interruption", took.Round(time.Millisecond))
	}
	var stop *Interrupted
	if !errors.As(r.Err, &stop) || stop.Cell != 2 {
		t.Fatalf("error %v (%T), want an *Interrupted at cell 2", r.Err, r.Err)
	}
	want := "interrupted by SIGTERM while cell 2 (In [1], id spin) `fmt.Println(\"spinning\")` ran"
	if !strings.HasPrefix(r.Err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", r.Err, want)
	}
	page, err := os.ReadFile(r.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "interrupted by SIGTERM while cell 2") || strings.Contains(string(page), "kernel died") {
		t.Errorf("the report does not say the run was interrupted:\n%.3000s", page)
	}
	if pids := markedUnder(tmp); len(pids) > 0 {
		t.Errorf("processes of the run still alive after RunNotebook: %v", pids)
		StopProcesses(pids, time.Second)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("TMPDIR holds %v after the run", entries)
	}
}

// cellProgramRuns reports whether a program GoNB built for a cell runs
// among the processes of the runs in dir.
func cellProgramRuns(dir string) bool {
	for _, pid := range markedUnder(dir) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && strings.HasPrefix(filepath.Base(exe), "gonb_") {
			return true
		}
	}
	return false
}
