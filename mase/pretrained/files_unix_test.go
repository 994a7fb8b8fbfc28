//go:build unix

package pretrained

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomase/gomase/internal/hostilefile"
	"github.com/gomase/gomase/mase/hub"
)

// TestLoadHostileFiles: every file Load reads is checked to be a regular
// file of a plausible size first; a symlink to /dev/zero, a named pipe or
// a 5 MiB config.json is a one-line error naming the file. (From a folder,
// package hub refused devices and pipes before this check existed; the 5
// MiB config.json loaded.)
func TestLoadHostileFiles(t *testing.T) {
	ho := offline(t)
	cfg, err := os.ReadFile("testdata/cls/config.json")
	if err != nil {
		t.Fatal(err)
	}
	// folder is a copy of testdata/cls with name replaced by make(path).
	folder := func(name string, make func(t testing.TB, path string)) string {
		dir := copyFolder(t, "testdata/cls", "config.json", "model.safetensors", "vocab.txt")
		path := filepath.Join(dir, name)
		os.Remove(path)
		make(t, path)
		return dir
	}
	zero, fifo := hostilefile.DevZero, hostilefile.FIFO
	write := func(data []byte) func(testing.TB, string) {
		return func(t testing.TB, path string) {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	huge := append(bytes.Repeat([]byte(" "), 5<<20), cfg...) // valid JSON of 5 MiB
	for _, c := range []struct {
		name, dir, want string
	}{
		{"config.json to /dev/zero", folder("config.json", zero), "config.json in folder"},
		{"config.json a FIFO", folder("config.json", fifo), "config.json in folder"},
		{"config.json of 5 MiB", folder("config.json", write(huge)), "config.json is 5.0 MiB, more than the 4 MiB allowed for a JSON config"},
		{"config.json a directory", folder("config.json", func(t testing.TB, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}), "config.json in folder"},
		{"model.safetensors to /dev/zero", folder("model.safetensors", zero), "model.safetensors in folder"},
		{"huge hidden_size", folder("config.json", write(smallConfig(t, map[string]string{"hidden_size": "1000000000000"}))), "hidden_size 1000000000000 is out of range (allowed: 1 to 65536)"},
	} {
		t.Run(c.name, func(t *testing.T) { loadFails(t, c.dir, ho, c.want) })
		if strings.HasSuffix(c.want, " in folder") {
			t.Run(c.name+" (the reason)", func(t *testing.T) { loadFails(t, c.dir, ho, "is not a regular file") })
		}
	}
	// pytorch_model.bin and a shard index, without model.safetensors.
	for _, name := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json"} {
		t.Run(name+" to /dev/zero", func(t *testing.T) {
			dir := folder(name, zero)
			os.Remove(filepath.Join(dir, "model.safetensors"))
			loadFails(t, dir, ho, name+" in folder")
			loadFails(t, dir, ho, "is not a regular file")
		})
	}
	// A vocabulary that is a device: the model loads, the tokenizer is left
	// out with the reason.
	t.Run("vocab.txt a FIFO", func(t *testing.T) {
		dir := folder("vocab.txt", fifo)
		done := make(chan *Model, 1)
		go func() {
			m, err := Load(dir, Options{Hub: ho})
			if err != nil {
				t.Error(err)
			}
			done <- m
		}()
		select {
		case m := <-done:
			if m == nil || m.Tokenizer != nil || !strings.Contains(m.TokenizerNote, "vocab.txt in folder") || !strings.Contains(m.TokenizerNote, "is not a regular file") {
				t.Errorf("tokenizer %v, note %q", m != nil && m.Tokenizer != nil, m.TokenizerNote)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Load blocked on a FIFO vocab.txt")
		}
	})
}

// loadFails checks that Load(dir) fails at once with a one-line error
// containing want.
func loadFails(t *testing.T, dir string, ho hub.Options, want string) {
	t.Helper()
	hostilefile.Refused(t, "Load "+dir, func() error {
		m, err := Load(dir, Options{Hub: ho})
		if m != nil {
			err = nil
		}
		return err
	}, want, 20*time.Second)
}
