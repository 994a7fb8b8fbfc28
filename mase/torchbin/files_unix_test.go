//go:build unix

package torchbin

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// TestReadFileNotRegular: a checkpoint that is a symlink to /dev/zero, a
// named pipe or a directory is refused in one line before a byte is read
// (before the fix, /dev/zero grew until the process died out of memory and
// a pipe blocked until a writer came).
func TestReadFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "pytorch_model.bin")
	hostilefile.DevZero(t, zero)
	fifo := filepath.Join(t.TempDir(), "pytorch_model.bin")
	hostilefile.FIFO(t, fifo)
	for path, want := range map[string]string{
		zero: "pytorch_model.bin is a character device, not a regular file (allowed: a regular file or a symlink to one)",
		fifo: "pytorch_model.bin is a named pipe (FIFO), not a regular file",
		dir:  "is a directory, not a regular file",
	} {
		hostilefile.Refused(t, "ReadFile "+path, func() error { _, err := ReadFile(path); return err }, want, 10*time.Second)
	}
}
