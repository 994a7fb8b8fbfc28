package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gomase/gomase/mase/backend"
	"github.com/gomase/gomase/mase/perf"
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

// TestBenchKernelGraphs runs `mase bench sdpa|mxint8 --backend go`: the
// GoMLX graphs timed inside one executable, next to the dispatch floor.
func TestBenchKernelGraphs(t *testing.T) {
	code, out, stderr := runCLI("bench", "sdpa", "--backend", "go", "--shape", "1,2,16,8", "--reps", "2", "--loop", "3", "--json")
	if code != 0 {
		t.Fatalf("sdpa: exit %d: %s", code, stderr)
	}
	var s perf.SDPAGraphReport
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Reps != 3 || s.Timings != 2 || s.DType != "float32" || s.NaiveMaxAbsErr > 1e-5 || s.FusedMaxAbsErr > 1e-5 || s.DispatchFloorMs <= 0 {
		t.Errorf("sdpa: %v, %+v", err, s)
	}
	code, out, stderr = runCLI("bench", "mxint8", "--backend", "go", "--values", "1000", "--group-size", "8", "--reps", "2", "--loop", "2")
	if code != 0 || !strings.Contains(out, "bit-exact with the reference") || !strings.Contains(out, "dispatch floor") {
		t.Errorf("mxint8: exit %d, %s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("bench", "sdpa", "--backend", "go", "--loop", "0"); code == 0 || !strings.Contains(stderr, "--loop must be ≥ 1") {
		t.Errorf("--loop 0: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("bench", "mxint8", "--backend", "nope"); code == 0 || !strings.Contains(stderr, `unknown backend "nope"`) {
		t.Errorf("--backend nope: exit %d, %s", code, stderr)
	}
}
