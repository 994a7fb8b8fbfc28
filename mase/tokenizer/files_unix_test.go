//go:build unix

package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLoadVocabNotRegular: a vocabulary that is a named pipe or a device
// is refused at once, naming the file (before the fix, a pipe blocked until
// a writer came).
func TestLoadVocabNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "vocab.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo: "vocab.txt is a named pipe (FIFO), not a regular file",
		zero: "zero.txt is a character device, not a regular file",
	} {
		done := make(chan error, 1)
		go func() { _, err := LoadVocab(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: LoadVocab blocked", path)
		}
	}
}
