//go:build unix

package limits

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// TestReadFileDevices: a symlink to /dev/zero and a named pipe are refused
// at once, instead of growing until memory runs out or blocking until a
// writer comes.
func TestReadFileDevices(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "model.safetensors")
	hostilefile.DevZero(t, zero)
	fifo := filepath.Join(dir, "pytorch_model.bin")
	hostilefile.FIFO(t, fifo)
	for path, want := range map[string]string{
		zero: "model.safetensors is a character device, not a regular file (allowed: a regular file or a symlink to one)",
		fifo: "pytorch_model.bin is a named pipe (FIFO), not a regular file",
	} {
		hostilefile.Refused(t, "ReadFile "+path, func() error { _, err := ReadFile(path, Weights); return err }, want, 10*time.Second)
		hostilefile.Refused(t, "Open "+path, func() error { _, _, err := Open(path, Weights); return err }, want, 10*time.Second)
	}
}
