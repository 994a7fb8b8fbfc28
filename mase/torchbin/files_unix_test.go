//go:build unix

package torchbin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileNotRegular: a checkpoint that is a symlink to /dev/zero, a
// named pipe or a directory is refused in one line before a byte is read
// (before the fix, /dev/zero grew until the process died out of memory and
// a pipe blocked until a writer came).
func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "pytorch_model.bin")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "pytorch_model.bin")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	for path, want := range map[string]string{
		zero: "pytorch_model.bin is a character device, not a regular file (allowed: a regular file or a symlink to one)",
		fifo: "pytorch_model.bin is a named pipe (FIFO), not a regular file",
		dir:  "is a directory, not a regular file",
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v, want one line containing %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: ReadFile blocked", path)
		}
	}
}
