package main

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoHomeNoLibraryNoise: with HOME unset, the binary's first output is
// its own (go-xla's initialisation used to print a klog error line about
// PJRT plugins first, whatever the command), and the command still sees
// HOME unset.
func TestNoHomeNoLibraryNoise(t *testing.T) {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CACHE_HOME=") || strings.HasPrefix(kv, "GOMASE_")
	})
	env = append(env, "GOMASE_RUN_AS_MASE=1", "GOMASE_DATA_DIR="+t.TempDir())
	for _, args := range [][]string{{"--help"}, {"tokenize", "hi"}} {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		if strings.Contains(stderr.String(), "home directory") || strings.HasPrefix(stderr.String(), "E1") {
			t.Errorf("mase %v with HOME unset: a library's line on stderr: %.300q", args, stderr.String())
		}
		if args[0] == "tokenize" && !strings.Contains(stderr.String(), "$HOME") {
			t.Errorf("mase tokenize with HOME unset: %.500q; want the data search's message that $HOME is not set", stderr.String())
		}
	}
}
