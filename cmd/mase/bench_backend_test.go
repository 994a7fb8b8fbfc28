package main

import (
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/backend"
)

// TestBenchBackendErrors checks that `mase bench compile --backend` refuses
// what it cannot open with one clear line, before building any model.
func TestBenchBackendErrors(t *testing.T) {
	missing := "no such file"
	if !backend.XLAAvailable {
		missing = "no XLA backend"
	}
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"xla:/nonexistent.so", []string{"--backend", "/nonexistent.so", missing}},
		{"nope", []string{"--backend", `unknown backend "nope"`, "allowed: " + backend.Allowed}},
		{"xla:cpu", []string{"xla:cpu is not offered", "allowed: " + backend.Allowed}},
		{"xla:gpu", []string{`unknown xla plugin "gpu"`, "allowed: " + backend.Allowed}},
	} {
		code, out, stderr := runCLI("bench", "compile", "--backend", tc.spec, "--batch", "1", "--seq", "8", "--iters", "2", "--warmup", "1")
		if code == 0 || out != "" {
			t.Errorf("--backend %s: exit %d, stdout %q", tc.spec, code, out)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "mase bench: ") {
			t.Errorf("--backend %s: want one error line, got %q", tc.spec, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("--backend %s: stderr %q lacks %q", tc.spec, stderr, w)
			}
		}
	}
}

// TestBenchBackendGo runs the compile benchmark on a Go backend opened by
// --backend (not the shared default) and checks the workload names it.
func TestBenchBackendGo(t *testing.T) {
	code, out, stderr := runCLI("bench", "compile", "--backend", "go:ops_sequential", "--batch", "1", "--seq", "8", "--iters", "2", "--warmup", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "backend go:ops_sequential") {
		t.Errorf("workload does not name the backend:\n%s", out)
	}
}
