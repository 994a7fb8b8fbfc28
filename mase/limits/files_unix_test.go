//go:build unix

package limits

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileDevices: a symlink to /dev/zero and a named pipe are refused
// at once, instead of growing until memory runs out or blocking until a
// writer comes.
func TestReadFileDevices(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "model.safetensors")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pytorch_model.bin")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	for path, want := range map[string]string{
		zero: "model.safetensors is a character device, not a regular file (allowed: a regular file or a symlink to one)",
		fifo: "pytorch_model.bin is a named pipe (FIFO), not a regular file",
	} {
		done := make(chan error, 2)
		go func() {
			_, err := ReadFile(path, Weights)
			done <- err
			_, _, err = Open(path, Weights)
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: %v, want %q", path, err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: blocked", path)
			}
		}
	}
}
