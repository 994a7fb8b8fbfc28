package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gomase/gomase/kernel/report"
	"github.com/gomase/gomase/kernel/runner"
	"github.com/gomase/gomase/mase/lab/labsetup/scale"
)

func init() {
	register(command{
		name:  "labs",
		usage: "[--scale quick|standard|full | --quick | --full] [--out DIR] [--timeout DURATION] [--check] [--screenshots DIR] [-v] [NOTEBOOK.ipynb...]",
		short: "execute the lab notebooks headless and write HTML reports",
		run:   runLabs,
	})
}

// runLabs executes notebooks (default: every notebooks/*.ipynb of the
// repository) with the gomase kernel and prints one line per notebook.
func runLabs(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mase labs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scaleName := fs.String("scale", "", "how much work the notebooks do: quick (what CI runs, minutes each), standard (every step and sweep on reduced data, within an hour on 2 CPU cores) or full (the labs' own scale); default: full with a GPU backend in GOMLX_BACKEND, standard otherwise")
	quick := fs.Bool("quick", false, "the same as --scale quick")
	full := fs.Bool("full", false, "the same as --scale full")
	out := fs.String("out", "reports", "directory for the executed notebooks (NAME.ipynb) and reports (NAME.html)")
	timeout := duration(fs, "timeout", runner.DefaultCellTimeout, true, "longest time one cell may run")
	verbose := fs.Bool("v", false, "print a line as each cell starts and finishes")
	check := fs.Bool("check", false, "open every report and the index in headless Chromium (network off) and fail on a console error, a network fetch, or an SVG that does not draw")
	fs.BoolVar(check, "check-svg", false, "the same as --check (its former name)")
	shots := fs.String("screenshots", "", "save PNG screenshots of the index and of the first report as Chromium shows them into this directory")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mase labs [--scale quick|standard|full | --quick | --full] [--out DIR] [--timeout DURATION] [--check] [--screenshots DIR] [-v] [NOTEBOOK.ipynb...]")
		fmt.Fprintln(stderr, "Runs the notebooks (default: notebooks/*.ipynb of the gomase repository) headless with")
		fmt.Fprintln(stderr, "the \"Go (gomase)\" kernel and writes DIR/NAME.ipynb and a self-contained DIR/NAME.html,")
		fmt.Fprintln(stderr, "then DIR/index.html linking the reports with the run's date, machine, backend, scale and wall times.")
		fs.PrintDefaults()
	}
	// Flags may come before or after the notebooks.
	var notebooks []string
	for {
		if err := parseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		notebooks = append(notebooks, fs.Arg(0))
		args = fs.Args()[1:]
	}

	sc, err := chooseScale(*scaleName, *quick, *full)
	if err != nil {
		return err
	}
	opts := runner.Options{OutDir: *out, Scale: sc, CellTimeout: *timeout}
	if *verbose {
		opts.Progress = stderr
	}
	root, err := runner.Root()
	if err != nil {
		return err
	}
	opts.Root = root
	if len(notebooks) == 0 {
		if notebooks, err = runner.Notebooks(root); err != nil {
			return err
		}
	}
	for _, nb := range notebooks {
		if !strings.HasSuffix(nb, ".ipynb") {
			return fmt.Errorf("%q is not a notebook: arguments must be .ipynb files", nb)
		}
	}
	// Every output is checked before any notebook runs (runner.Run checks
	// the notebooks and --out).
	if *shots != "" {
		if err := runner.CheckOutputFolder("--screenshots", *shots); err != nil {
			return err
		}
	}
	opts.Notices = stderr

	if sc == scale.Full && !scale.IsGPUBackend(scale.BackendName()) {
		fmt.Fprintf(stderr, "mase labs: full scale on the %s backend trains on all of IMDb at 512 tokens: more than a day on a few CPU cores (--scale standard finishes within an hour on two)\n", scale.BackendName())
	}

	ctx, stop := stopOnSignal(stderr)
	defer stop()
	run := report.DescribeRun(root, sc)
	outDir := *out
	if outDir == "" {
		outDir = "reports"
	}
	// Check each report as it is written, and keep the index current, so
	// that a long run can be followed in the browser.
	opts.AfterEach = func(done []report.Result) {
		r := &done[len(done)-1]
		if *check && r.OK() {
			r.Err = checkReport(r.Report)
		}
		progress := run
		progress.Pending = notebooks[len(done):]
		if _, err := report.WriteIndex(outDir, done, progress); err != nil {
			fmt.Fprintf(stderr, "index: %v\n", err)
		}
	}
	results, err := runner.Run(ctx, notebooks, opts)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			return fmt.Errorf("%w before any notebook ran", cause)
		}
		return err
	}
	interrupted := context.Cause(ctx)
	width := 0
	for _, r := range results {
		width = max(width, len(r.Name))
	}
	var failed []string
	for _, r := range results {
		status := "OK"
		if !r.OK() {
			status = "FAILED"
			failed = append(failed, r.Name)
		}
		shown := r.Report
		if shown == "" {
			shown = "(no report)"
		}
		fmt.Fprintf(stdout, "%-*s  %-6s  %7.1fs  %s\n", width, r.Name, status, r.Duration.Round(100*time.Millisecond).Seconds(), shown)
		if r.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", r.Name, r.Err)
		}
	}
	index, err := report.WriteIndex(outDir, results, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "index: %s\n", index)
	if interrupted != nil {
		return fmt.Errorf("%w after %d of %d notebooks (the one running was stopped with its kernel; reports so far in %s)", interrupted, len(results), len(notebooks), index)
	}
	if *check {
		if err := report.CheckPage(index, false); err != nil {
			return fmt.Errorf("index check: %w", err)
		}
	}
	if *shots != "" {
		if err := screenshots(*shots, index, results, stdout); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d notebooks failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// stopOnSignal returns a context that SIGINT and SIGTERM cancel with the
// cause "interrupted by SIGINT" (or SIGTERM): the runner then stops the
// running notebook's kernel and every process of the run, and the command
// writes the report and the index and ends. Later signals only say that
// it is stopping. stop ends the handling.
func stopOnSignal(stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if ctx.Err() == nil {
					cancel(fmt.Errorf("interrupted by %s", signalName(sig)))
				} else {
					fmt.Fprintf(stderr, "mase labs: %s: already stopping the kernel (at most about 30 s)\n", signalName(sig))
				}
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel(nil)
		})
	}
}

// chooseScale is the scale the flags name: at most one of --scale, --quick
// and --full; the GOMASE_SCALE/GOMASE_QUICK environment, then
// scale.Default, when none is given.
func chooseScale(name string, quick, full bool) (scale.Scale, error) {
	given := 0
	for _, set := range []bool{name != "", quick, full} {
		if set {
			given++
		}
	}
	switch {
	case given > 1:
		return "", errors.New("--scale, --quick and --full each choose the scale: give one of them")
	case quick:
		return scale.Quick, nil
	case full:
		return scale.Full, nil
	case name != "":
		sc, err := scale.Parse(name)
		if err != nil {
			return "", fmt.Errorf("--scale %s: %w", name, scale.ErrUnknown)
		}
		return sc, nil
	}
	return scale.FromEnv()
}

// checkReport verifies a report in headless Chromium with the network off:
// no console error, no fetch, and every SVG it holds draws.
func checkReport(path string) error {
	if err := report.CheckPage(path, false); err != nil {
		return fmt.Errorf("report check: %w", err)
	}
	return nil
}

// screenshots saves how Chromium shows the index and the first report
// written (DIR/index.png, DIR/NAME.png).
func screenshots(dir, index string, results []report.Result, stdout io.Writer) error {
	pages := []string{index}
	for _, r := range results {
		if r.Report != "" {
			pages = append(pages, r.Report)
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, p := range pages {
		png := filepath.Join(dir, strings.TrimSuffix(filepath.Base(p), ".html")+".png")
		if err := report.Screenshot(ctx, p, png, 1280, 1600); err != nil {
			return fmt.Errorf("screenshot of %s: %w", p, err)
		}
		fmt.Fprintf(stdout, "screenshot: %s\n", png)
	}
	return nil
}
