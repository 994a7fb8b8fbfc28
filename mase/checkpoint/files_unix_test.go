//go:build unix

package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
)

// TestLoadNotRegularFiles: a checkpoint file that is a symlink to
// /dev/zero or a named pipe is refused in one line naming it, before a byte
// is read. Before the fix, /dev/zero grew until the process died out of
// memory and a pipe blocked until a writer came.
func TestLoadNotRegularFiles(t *testing.T) {
	dir := t.TempDir()
	exportMLP(t, dir, "a", 1)
	zero, fifo := hostilefile.DevZero, hostilefile.FIFO
	for _, c := range []struct {
		name, file string
		make       func(testing.TB, string)
		want       string
	}{
		{"parameters to /dev/zero", "a.safetensors", zero, "a.safetensors is a character device, not a regular file (allowed: a regular file or a symlink to one)"},
		{"parameters a FIFO", "a.safetensors", fifo, "a.safetensors is a named pipe (FIFO), not a regular file"},
		{"graph to /dev/zero", "a.json", zero, "a.json is a character device, not a regular file"},
		{"graph a FIFO", "a.json", fifo, "a.json is a named pipe (FIFO), not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			for _, f := range []string{"a.safetensors", "a.json"} {
				if f == c.file {
					c.make(t, filepath.Join(d, f))
					continue
				}
				data, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(d, f), data, 0o644)
			}
			loads := []func() error{func() error { _, err := Import(filepath.Join(d, "a")); return err }}
			if c.file == "a.safetensors" {
				m := newModel(t, "mlp", 1)
				loads = append(loads, func() error { _, err := LoadModel(filepath.Join(d, c.file), m, LoadOptions{}); return err })
			}
			for _, load := range loads {
				hostilefile.Refused(t, c.name, load, c.want, 20*time.Second)
			}
		})
	}
}
