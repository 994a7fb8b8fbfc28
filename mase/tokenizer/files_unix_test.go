//go:build unix

package tokenizer

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// TestLoadVocabNotRegular: a vocabulary that is a named pipe or a device
// is refused at once, naming the file (before the fix, a pipe blocked until
// a writer came).
func TestLoadVocabNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "vocab.txt")
	hostilefile.FIFO(t, fifo)
	zero := filepath.Join(dir, "zero.txt")
	hostilefile.DevZero(t, zero)
	for path, want := range map[string]string{
		fifo: "vocab.txt is a named pipe (FIFO), not a regular file",
		zero: "zero.txt is a character device, not a regular file",
	} {
		hostilefile.Refused(t, "LoadVocab "+path, func() error { _, err := LoadVocab(path); return err }, want, 10*time.Second)
	}
}
