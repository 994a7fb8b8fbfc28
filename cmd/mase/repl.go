package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gomase/gomase/kernel/kernelspec"
	"github.com/gomase/gomase/kernel/runner"
)

func init() {
	register(command{
		name:  "repl",
		usage: "[jupyter console options, e.g. --existing]",
		short: "a Go REPL: jupyter console with the gomase kernel (docs/repl.md)",
		run:   runREPL,
	})
}

// replBanner is printed by jupyter console once the kernel is up; the
// console formats it, so {kernel_banner} is replaced and braces are doubled.
const replBanner = `gomase Go REPL (jupyter console, {kernel_banner}); see docs/repl.md
  Enter adds a line; Alt+Enter (or Esc, Enter) runs the cell, as do two empty lines.
  A cell holds Go declarations (import lines, func, type, var, const), kept for
  later cells; a line "%%" starts statements run as main, e.g.
      import "github.com/gomase/gomase/mase/quant"
      %%
      fmt.Println(quant.QuantizeInteger(0.7, 8, 4))
  "!cmd" runs a shell command. SVG and HTML displays are saved to files and
  shown as their paths; Markdown shows as text. Ctrl-D, then y, quits.`

// replConsoleOptions are jupyter console's options for GoNB. GoNB does not
// answer is_complete requests; by default the console then waits a second
// on the first Enter, warns and runs that line alone before falling back
// to its own rule (a cell ends with an empty line). With
// use_kernel_is_complete=False that rule holds from the first cell on.
var replConsoleOptions = []string{
	"--ZMQTerminalInteractiveShell.use_kernel_is_complete=False",
	"--ZMQTerminalInteractiveShell.banner=" + replBanner,
}

// replPythonWarnings silences the console's warning that Pygments has no
// lexer for the language GoNB reports.
const replPythonWarnings = "ignore:No lexer found:UserWarning"

// runREPL checks that Jupyter, jupyter console and the gomase kernelspec
// are installed, then replaces mase with `jupyter console --kernel gomase`
// on the same terminal; args are passed on to jupyter console.
func runREPL(args []string, stdout, stderr io.Writer) error {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			fmt.Fprintln(stdout, "usage: mase repl [jupyter console options]")
			fmt.Fprintln(stdout, "Starts `jupyter console --kernel gomase`: a Go REPL (GoNB) in which the packages of")
			fmt.Fprintln(stdout, "this checkout are importable. Options go to jupyter console, e.g. --existing FILE to")
			fmt.Fprintln(stdout, "attach to a running kernel; `jupyter console --help` lists them. See docs/repl.md.")
			return nil
		}
	}
	argv, err := replCommand(context.Background(), args)
	if err != nil {
		return err
	}
	warnings := replPythonWarnings
	if w := os.Getenv("PYTHONWARNINGS"); w != "" {
		warnings = w + "," + warnings
	}
	if err := syscall.Exec(argv[0], argv, runner.SetEnv(os.Environ(), "PYTHONWARNINGS", warnings)); err != nil {
		return fmt.Errorf("starting %s: %w", strings.Join(argv[:3], " "), err)
	}
	return nil // not reached: Exec replaced the process
}

// replCommand returns the jupyter console command line after checking
// that everything it needs is installed; its errors say what is missing
// (those that `make setup` fixes end with "run make setup").
func replCommand(ctx context.Context, args []string) ([]string, error) {
	root, err := runner.Root()
	if err != nil {
		return nil, fmt.Errorf("%w (run mase repl inside the checkout)", err)
	}
	if err := runner.CheckKernel(ctx, runner.Options{Root: root}); err != nil {
		return nil, err
	}
	console := filepath.Join(filepath.Dir(runner.DefaultJupyter), "jupyter-console")
	if _, err := os.Stat(console); err != nil {
		return nil, fmt.Errorf("jupyter console is not installed (%s is missing; Debian package jupyter-console): run make setup", console)
	}
	argv := []string{runner.DefaultJupyter, "console", "--kernel", kernelspec.Name}
	argv = append(argv, replConsoleOptions...)
	return append(argv, args...), nil
}
