package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/runner"
)

// TestREPLCommandLine checks the jupyter console command `mase repl` runs.
func TestREPLCommandLine(t *testing.T) {
	requireREPL(t)
	argv, err := replCommand(context.Background(), []string{"--existing", "kernel-1.json"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(argv, " ")
	for _, want := range []string{"/usr/bin/jupyter console --kernel gomase ", "use_kernel_is_complete=False", " --existing kernel-1.json"} {
		if !strings.Contains(got, want) {
			t.Errorf("command %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "--existing kernel-1.json") {
		t.Errorf("command %q: the user's options must come last, to override ours", got)
	}
}

func TestREPLHelp(t *testing.T) {
	code, out, stderr := runCLI("repl", "--help")
	if code != 0 || !strings.Contains(out, "jupyter console --kernel gomase") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// requireREPL fails the test (it never skips: CI runs `make setup` before
// `go test`) when tmux, Jupyter or the gomase kernelspec is missing, and
// returns the repository root.
func requireREPL(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed (Debian package tmux): run make setup")
	}
	root, err := runner.Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.CheckKernel(context.Background(), runner.Options{Root: root}); err != nil {
		t.Fatalf("the gomase kernel is not usable: %v", err)
	}
	return root
}

// TestREPL runs `mase repl` in a detached tmux session, sends it cells as
// a user would and reads the answers from the screen: a cell that imports
// a package of this checkout, a computation, and rich displays, whose text
// forms (a file path, Markdown source) must show. Then it quits with
// Ctrl-D and checks that the kernel is gone.
//
// Cells are pasted (tmux paste-buffer -p: bracketed paste, as a terminal
// pastes) and run with Alt+Enter. Keys sent one burst after another would
// race jupyter console 6.4.4's completion-while-typing, which intermittently
// fails with "Unhandled exception in event loop ... cannot enter context"
// and drops the keys; a paste arrives as one event.
func TestREPL(t *testing.T) {
	root := requireREPL(t)
	start := time.Now()
	s := startREPL(t, root)

	banner := s.waitFor("the first prompt", 2*time.Minute, func(screen string) bool { return strings.Contains(screen, "In [1]:") })
	if !strings.Contains(banner, "gomase Go REPL") || !strings.Contains(banner, "Alt+Enter") {
		t.Errorf("no gomase banner before the first prompt:\n%s", banner)
	}

	// The first cell builds the checkout's mase/quant through the kernel's
	// go.work: slow on a cold build cache.
	out := s.run(1, 5*time.Minute, `import "github.com/gomase/gomase/mase/quant"`, "%%", "fmt.Println(quant.QuantizeInteger(0.7, 8, 4))")
	if !hasLine(out, "0.6875") {
		t.Errorf("quant cell printed %q, want 0.6875", out)
	}

	out = s.run(2, 2*time.Minute, "%%", "fmt.Println(6*7)")
	if !hasLine(out, "42") {
		t.Errorf("6*7 printed %q, want 42", out)
	}

	const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8" fill="#e0157a"/></svg>`
	out = s.run(3, 2*time.Minute, `import "github.com/gomase/gomase/mase/ui/display"`, "%%",
		"display.SVG(`"+svg+"`)", "display.Markdown(\"| op | count |\\n|---|---|\\n| linear | 14 |\")")
	var svgFile string
	if m := regexp.MustCompile(`\[SVG image: (\S+\.svg)\]`).FindStringSubmatch(out); m == nil {
		t.Errorf("the SVG display printed %q, want [SVG image: PATH]", out)
	} else if saved, err := os.ReadFile(m[1]); err != nil || string(saved) != svg {
		t.Errorf("%s holds %q (%v), want the displayed SVG", m[1], saved, err)
	} else {
		svgFile = m[1]
	}
	if !hasLine(out, "| linear | 14 |") {
		t.Errorf("the Markdown display printed %q, want its table as text", out)
	}

	s.keys("C-d")
	s.waitFor("the exit question", 30*time.Second, func(screen string) bool { return strings.Contains(screen, "Do you really want to exit") })
	s.keys("y", "Enter")
	final := s.waitFor("mase repl to exit", time.Minute, func(screen string) bool { return strings.Contains(screen, "mase repl exited:") })
	if !strings.Contains(final, "mase repl exited: 0") {
		t.Errorf("mase repl did not exit with status 0:\n%s", tail(final, 10))
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(runner.KernelProcesses(s.runtimeDir)) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if pids := runner.KernelProcesses(s.runtimeDir); len(pids) > 0 {
		t.Errorf("the kernel (pids %v) still runs after the REPL quit", pids)
	}
	if _, err := os.Stat(svgFile); svgFile != "" && err == nil {
		t.Errorf("%s outlived the kernel: saved displays belong in GoNB's temporary directory", svgFile)
	}
	t.Logf("REPL session: %s", time.Since(start).Round(100*time.Millisecond))
}

// replSession is `mase repl` running in a private tmux server.
type replSession struct {
	t          *testing.T
	socket     string // tmux -S path: a server of the test's own
	runtimeDir string // JUPYTER_RUNTIME_DIR: the kernel's connection file is here
}

// startREPL starts `mase repl` (this test binary as mase) in a detached
// 200×50 tmux session; the session, and the kernel if it outlives the
// console, are killed when the test ends.
func startREPL(t *testing.T, root string) *replSession {
	t.Helper()
	s := &replSession{
		t:          t,
		socket:     filepath.Join(t.TempDir(), "tmux"), // removed with the directory
		runtimeDir: t.TempDir(),
	}
	home := t.TempDir() // the console's config and history stay out of the user's
	env := []string{
		"GOMASE_RUN_AS_MASE=1",
		"JUPYTER_RUNTIME_DIR=" + s.runtimeDir,
		"JUPYTER_CONFIG_DIR=" + filepath.Join(home, "jupyter"),
		"IPYTHONDIR=" + filepath.Join(home, "ipython"),
	}
	shell := fmt.Sprintf("env %s %s repl; echo \"mase repl exited: $?\"; exec sleep 3600",
		strings.Join(quoteAll(env), " "), shellQuote(os.Args[0]))
	t.Cleanup(s.kill)
	if out, err := s.tmux(nil, "-f", "/dev/null", "new-session", "-d", "-x", "200", "-y", "50", "-s", "repl", "-c", root, shell); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { // runs before kill
		if t.Failed() {
			if out, err := s.tmux(nil, "capture-pane", "-p", "-J", "-S", "-", "-t", "repl"); err == nil {
				t.Logf("the REPL's screen:\n%s", tail(out, 60))
			}
		}
	})
	return s
}

// tmux runs a tmux command on the session's server, with stdin as input.
func (s *replSession) tmux(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// keys sends tmux key names (Enter, C-d, Escape, or text) to the REPL.
func (s *replSession) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(nil, append([]string{"send-keys", "-t", "repl"}, keys...)...); err != nil {
		s.t.Fatalf("tmux send-keys %q: %v: %s", keys, err, out)
	}
}

// screen returns the pane's whole history, wrapped lines joined.
func (s *replSession) screen() string {
	s.t.Helper()
	out, err := s.tmux(nil, "capture-pane", "-p", "-J", "-S", "-", "-t", "repl")
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// waitFor polls the screen until done holds, failing the test after
// timeout or when the REPL shows an upstream error or exits unexpectedly.
func (s *replSession) waitFor(what string, timeout time.Duration, done func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		screen := s.screen()
		if done(screen) {
			return screen
		}
		if strings.Contains(screen, "Unhandled exception in event loop") {
			s.t.Fatalf("jupyter console failed (an upstream prompt_toolkit/asyncio bug) while waiting for %s:\n%s", what, tail(screen, 30))
		}
		if strings.Contains(screen, "mase repl exited:") {
			s.t.Fatalf("mase repl exited while waiting for %s:\n%s", what, tail(screen, 30))
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s after %s; the screen:\n%s", what, timeout, tail(screen, 30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// run pastes a cell at prompt n, runs it with Alt+Enter, waits for prompt
// n+1 and returns what the cell printed (its echoed input left out).
func (s *replSession) run(n int, timeout time.Duration, lines ...string) string {
	s.t.Helper()
	prompt := fmt.Sprintf("In [%d]:", n)
	s.waitFor(prompt, timeout, func(screen string) bool { return strings.Contains(screen, prompt) })
	time.Sleep(300 * time.Millisecond) // let prompt_toolkit turn bracketed paste on
	cell := strings.Join(lines, "\n")
	if out, err := s.tmux([]byte(cell), "load-buffer", "-b", "cell", "-"); err != nil {
		s.t.Fatalf("tmux load-buffer: %v: %s", err, out)
	}
	if out, err := s.tmux(nil, "paste-buffer", "-p", "-d", "-b", "cell", "-t", "repl"); err != nil {
		s.t.Fatalf("tmux paste-buffer: %v: %s", err, out)
	}
	s.keys("Escape", "Enter")
	next := fmt.Sprintf("In [%d]:", n+1)
	t0 := time.Now()
	screen := s.waitFor("the answer to cell "+strconv.Itoa(n), timeout, func(screen string) bool { return strings.Contains(screen, next) })
	s.t.Logf("cell %d ran in %s", n, time.Since(t0).Round(100*time.Millisecond))
	return cellOutput(screen, prompt, next)
}

var continuationRE = regexp.MustCompile(`^\s+\.\.\.:`)

// cellOutput returns the lines between prompts from and to, without the
// echoed input (the prompt line and its "...:" continuation lines).
func cellOutput(screen, from, to string) string {
	i := strings.Index(screen, from)
	j := strings.Index(screen, to)
	if i < 0 || j < i {
		return ""
	}
	var out []string
	for k, line := range strings.Split(screen[i:j], "\n") {
		if k == 0 || continuationRE.MatchString(line) || strings.TrimSpace(line) == "" {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func hasLine(out, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kill stops the tmux server and any kernel started from the session.
func (s *replSession) kill() {
	s.tmux(nil, "kill-server")
	runner.StopKernels(s.runtimeDir, 5*time.Second)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = shellQuote(s)
	}
	return q
}
