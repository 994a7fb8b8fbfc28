package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/gomase/gomase/kernel/labs"
)

func init() {
	register(command{
		name:  "labs",
		usage: "[--quick] [--out DIR] [--timeout DURATION] [--check-svg] [-v] [NOTEBOOK.ipynb...]",
		short: "execute the lab notebooks headless and write HTML reports",
		run:   runLabs,
	})
}

// runLabs executes notebooks (default: every notebooks/*.ipynb of the
// repository) with the gomase kernel and prints one line per notebook.
func runLabs(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mase labs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "quick mode: set GOMASE_QUICK=1 so notebooks shrink their work (what CI runs)")
	out := fs.String("out", "reports", "directory for the executed notebooks (NAME.ipynb) and reports (NAME.html)")
	timeout := fs.Duration("timeout", labs.DefaultCellTimeout, "longest time one cell may run")
	verbose := fs.Bool("v", false, "print a line as each cell starts and finishes")
	checkSVG := fs.Bool("check-svg", false, "open each report that holds SVG in headless Chromium (network off) and fail unless every SVG is visible")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mase labs [--quick] [--out DIR] [--timeout DURATION] [--check-svg] [-v] [NOTEBOOK.ipynb...]")
		fmt.Fprintln(stderr, "Runs the notebooks (default: notebooks/*.ipynb of the gomase repository) headless with")
		fmt.Fprintln(stderr, "the \"Go (gomase)\" kernel and writes DIR/NAME.ipynb and a self-contained DIR/NAME.html,")
		fmt.Fprintln(stderr, "then DIR/index.html linking the reports with the run's date, machine, backend, mode and wall times.")
		fs.PrintDefaults()
	}
	// Flags may come before or after the notebooks.
	var notebooks []string
	for {
		if err := fs.Parse(args); err != nil {
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
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive (e.g. 30m)", *timeout)
	}

	opts := labs.Options{OutDir: *out, Quick: *quick, CellTimeout: *timeout}
	if *verbose {
		opts.Progress = stderr
	}
	root, err := labs.Root()
	if err != nil {
		return err
	}
	opts.Root = root
	if len(notebooks) == 0 {
		if notebooks, err = labs.Notebooks(root); err != nil {
			return err
		}
	}
	for _, nb := range notebooks {
		if !strings.HasSuffix(nb, ".ipynb") {
			return fmt.Errorf("%q is not a notebook: arguments must be .ipynb files", nb)
		}
		if _, err := os.Stat(nb); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	run := labs.DescribeRun(root, *quick)
	results, err := labs.Run(ctx, notebooks, opts)
	if err != nil {
		return err
	}
	if *checkSVG {
		for i, r := range results {
			if r.OK() {
				results[i].Err = checkReportSVG(r.Report)
			}
		}
	}
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
		report := r.Report
		if report == "" {
			report = "(no report)"
		}
		fmt.Fprintf(stdout, "%-*s  %-6s  %7.1fs  %s\n", width, r.Name, status, r.Duration.Round(100*time.Millisecond).Seconds(), report)
		if r.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", r.Name, r.Err)
		}
	}
	outDir := *out
	if outDir == "" {
		outDir = "reports"
	}
	index, err := labs.WriteIndex(outDir, results, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "index: %s\n", index)
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d notebooks failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// checkReportSVG verifies, in headless Chromium with the network off, that
// every SVG of a report is visible. Reports without SVG pass.
func checkReportSVG(report string) error {
	page, err := os.ReadFile(report)
	if err != nil {
		return err
	}
	if !strings.Contains(string(page), "<svg") {
		return nil
	}
	if err := labs.CheckSVGVisible(report); err != nil {
		return fmt.Errorf("report check: %w", err)
	}
	return nil
}
