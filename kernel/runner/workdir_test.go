package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startMarked starts a long sleep in a session of its own (as the kernel
// runs) whose environment marks it as a process of the run in dir.
func startMarked(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Env = append(os.Environ(), RunEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reap it, so that it does not linger as a zombie
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd
}

// TestSweepLeftovers: the work folder of a run killed outright (its lock
// free) is removed with the processes still marked with it; a live run's
// folder and processes, and a folder of that name without its lock file,
// are left alone; the live run's Close ends its own.
func TestSweepLeftovers(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	// A run that was SIGKILLed: its lock file is there but nobody holds it.
	dead := filepath.Join(tmp, workDirPrefix+"111")
	if err := os.MkdirAll(filepath.Join(dead, "gonb_1234"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dead+".lock", []byte("mase labs, pid 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := startMarked(t, dead)

	live, err := newWorkDir()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(live.Path, filepath.Join(tmp, workDirPrefix)) {
		t.Fatalf("work folder %s is not in TMPDIR %s", live.Path, tmp)
	}
	kernel := startMarked(t, live.Path)

	foreign := filepath.Join(tmp, workDirPrefix+"222")
	if err := os.Mkdir(foreign, 0o700); err != nil {
		t.Fatal(err)
	}

	if got := MarkedProcesses(RunEnv, dead); !slices.Equal(got, []int{orphan.Process.Pid}) {
		t.Fatalf("MarkedProcesses(dead run) = %v, want [%d]", got, orphan.Process.Pid)
	}
	swept := SweepLeftovers()
	if swept.Folders != 1 || swept.Processes != 1 || len(swept.Alive) != 0 {
		t.Errorf("SweepLeftovers = %+v, want 1 folder and 1 process ended", swept)
	}
	if !strings.Contains(swept.String(), "removed 1 work folder(s)") || !strings.Contains(swept.String(), "ended the 1 process(es)") {
		t.Errorf("the notice says %q", swept.String())
	}
	if !WaitGone(orphan.Process.Pid, 5*time.Second) {
		t.Error("the dead run's process still runs")
	}
	for _, p := range []string{dead, dead + ".lock"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left", p)
		}
	}
	if !Alive(kernel.Process.Pid) {
		t.Error("the sweep stopped a live run's process")
	}
	for _, p := range []string{live.Path, live.Path + ".lock", foreign} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the sweep removed %s: %v", p, err)
		}
	}
	if again := SweepLeftovers(); again.String() != "" {
		t.Errorf("a second sweep found %+v", again)
	}

	if left := live.Close(); len(left) != 0 {
		t.Errorf("Close left %v alive", left)
	}
	if !WaitGone(kernel.Process.Pid, time.Second) {
		t.Error("Close did not end the run's process")
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(foreign) {
		t.Errorf("after Close TMPDIR holds %v, want only the foreign folder", entries)
	}
}
