package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestStopKernels: a process naming a file of the runtime directory is
// found and stopped; one naming another directory is left alone.
func TestStopKernels(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	start := func(d string) *exec.Cmd {
		// tail -f names the connection file in its command line, as
		// `python -m ipykernel -f DIR/kernel-1.json` would.
		conn := filepath.Join(d, "kernel-1.json")
		if err := os.WriteFile(conn, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("tail", "-f", conn)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait() // reap it, so that it does not linger as a zombie
		return cmd
	}
	mine, theirs := start(dir), start(other)
	t.Cleanup(func() { _ = theirs.Process.Kill() })
	if got := KernelProcesses(dir); !slices.Equal(got, []int{mine.Process.Pid}) {
		t.Fatalf("KernelProcesses = %v, want [%d]", got, mine.Process.Pid)
	}
	if left := StopKernels(dir, 2*time.Second); len(left) > 0 {
		t.Errorf("StopKernels left %v alive", left)
	}
	if !WaitGone(mine.Process.Pid, time.Second) || len(KernelProcesses(dir)) != 0 {
		t.Error("the kernel still runs after StopKernels")
	}
	if !Alive(theirs.Process.Pid) {
		t.Error("StopKernels stopped a process of another runtime directory")
	}
}
