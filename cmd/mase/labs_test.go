package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomase/gomase/kernel/runner"
)

func TestLabsArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"labs", "--help"}, 0, "usage: mase labs"},
		{[]string{"labs", "--timeout", "0s"}, 1, `invalid value "0s" for flag -timeout: want a duration above 0`},
		{[]string{"labs", "--bogus"}, 1, "flag provided but not defined: -bogus"},
		{[]string{"labs", "notes.txt"}, 1, `"notes.txt" is not a notebook`},
		{[]string{"labs", "--quick", "missing.ipynb"}, 1, "missing.ipynb: no such file"},
		{[]string{"labs", "--scale", "huge"}, 1, "--scale huge: must be quick, standard or full"},
		{[]string{"labs", "--quick", "--full"}, 1, "give one of them"},
		{[]string{"labs", "--scale", "standard", "--quick"}, 1, "give one of them"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("mase %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}

// TestLabsCheckAndScreenshots runs a small notebook through the real
// kernel with --check and --screenshots: the report and the index pass the
// browser check and both screenshots are written.
func TestLabsCheckAndScreenshots(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gomase kernel")
	}
	out, shots := t.TempDir(), t.TempDir()
	var stdout, stderr bytes.Buffer
	nb := filepath.Join("..", "..", "kernel", "runner", "testdata", "e2e_svg.ipynb")
	if code := run([]string{"labs", "--quick", "--check", "--screenshots", shots, "--out", out, nb}, &stdout, &stderr); code != 0 {
		t.Fatalf("mase labs: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, name := range []string{"index.png", "e2e_svg.png"} {
		st, err := os.Stat(filepath.Join(shots, name))
		if err != nil || st.Size() < 1000 {
			t.Errorf("screenshot %s: %v (size %v)", name, err, st)
		}
	}
	if !strings.Contains(stdout.String(), "screenshot: "+filepath.Join(shots, "index.png")) {
		t.Errorf("output does not name the screenshots:\n%s", stdout.String())
	}
}

// processesUsing lists the live processes whose TMPDIR is dir or a folder
// in it: every process a `mase labs` started with TMPDIR=dir runs so.
func processesUsing(dir string) []int {
	var pids []int
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range environs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() || !runner.Alive(pid) {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == "TMPDIR="+dir || strings.HasPrefix(kv, "TMPDIR="+dir+"/") {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// cellProgramRuns reports whether a program GoNB built for a cell runs
// with TMPDIR in dir.
func cellProgramRuns(dir string) bool {
	for _, pid := range processesUsing(dir) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && strings.HasPrefix(filepath.Base(exe), "gonb_") {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSpinningLabs starts `mase labs` (this test binary as mase) on a
// notebook whose cell never ends, with TMPDIR=tmp, and returns once the
// cell's program runs.
func startSpinningLabs(t *testing.T, tmp, out string) (*exec.Cmd, *syncBuffer, chan error) {
	t.Helper()
	nb := filepath.Join("..", "..", "kernel", "runner", "testdata", "e2e_forever.ipynb")
	cmd := exec.Command(os.Args[0], "labs", "-v", "--quick", "--out", out, nb)
	cmd.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1", "TMPDIR="+tmp)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for _, pid := range processesUsing(tmp) { // what a failed test leaves
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	for deadline := time.Now().Add(3 * time.Minute); !cellProgramRuns(tmp); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("mase labs ended before its cell ran: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cell's program did not start within 3 minutes:\n%s", stderr.String())
		}
	}
	return cmd, stderr, done
}

// waitNoneLeft waits up to timeout for no process of TMPDIR tmp to be
// alive and returns those that still are.
func waitNoneLeft(tmp string, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		pids := processesUsing(tmp)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLabsSignalStopsTheRun sends SIGTERM (a timeout, CI cancelling,
// docker stop) or SIGINT (Ctrl-C) to `mase labs` while a cell spins: it
// must end within seconds saying it was interrupted by that signal (in its
// last line and in the report, not "the kernel died"), with no process it
// started (the kernel, gopls, the cell's program) alive and nothing left
// in TMPDIR.
func TestLabsSignalStopsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gomase kernel")
	}
	for _, c := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGTERM, "SIGTERM"}, {syscall.SIGINT, "SIGINT"}} {
		sig, name := c.sig, c.name
		t.Run(name, func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			cmd, stderr, done := startSpinningLabs(t, tmp, out)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("mase labs exited 0 after %s", name)
				}
			case <-time.After(40 * time.Second):
				t.Fatalf("mase labs still runs 40 s after %s:\n%s", name, stderr.String())
			}
			t.Logf("mase labs ended %s after %s", time.Since(sent).Round(time.Millisecond), name)
			msg := strings.TrimSpace(stderr.String())
			if last := msg[strings.LastIndex(msg, "\n")+1:]; !strings.Contains(last, "mase labs: interrupted by "+name) {
				t.Errorf("last line %q does not say the run was interrupted by %s", last, name)
			}
			page, err := os.ReadFile(filepath.Join(out, "e2e_forever.html"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), "interrupted by "+name+" while cell 2") || strings.Contains(string(page), "kernel died") {
				t.Errorf("the report does not say the run was interrupted by %s", name)
			}
			if pids := waitNoneLeft(tmp, time.Second); len(pids) > 0 {
				t.Errorf("processes of the run still alive after mase labs ended: %v", pids)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				t.Errorf("TMPDIR holds %v after mase labs ended", entries)
			}
		})
	}
}

// TestLabsKilledRunIsCleanedUp SIGKILLs `mase labs` while a cell spins:
// the kernel dies with it (the driver gets SIGTERM by PR_SET_PDEATHSIG and
// shuts it down), and the next run removes the work folder left in TMPDIR.
func TestLabsKilledRunIsCleanedUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the gomase kernel")
	}
	tmp, out := t.TempDir(), t.TempDir()
	cmd, _, done := startSpinningLabs(t, tmp, out)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	if pids := waitNoneLeft(tmp, 20*time.Second); len(pids) > 0 {
		t.Errorf("processes of the killed run still alive 20 s later: %v", pids)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) == 0 {
		t.Fatal("the killed run left no work folder in TMPDIR for the next run to remove")
	}
	next := exec.Command(os.Args[0], "labs", "--quick", "--out", out, filepath.Join("..", "..", "kernel", "runner", "testdata", "e2e_hello.ipynb"))
	next.Env = append(os.Environ(), "GOMASE_RUN_AS_MASE=1", "TMPDIR="+tmp)
	var stderr bytes.Buffer
	next.Stdout, next.Stderr = io.Discard, &stderr
	if err := next.Run(); err != nil {
		t.Fatalf("the next mase labs: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "removed 1 work folder(s) in "+tmp+" left by mase labs runs that were killed") {
		t.Errorf("the next run does not say it removed the killed run's folder:\n%s", stderr.String())
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("TMPDIR holds %v after the next run", entries)
	}
	if pids := processesUsing(tmp); len(pids) > 0 {
		t.Errorf("processes still alive after the next run: %v", pids)
	}
}
