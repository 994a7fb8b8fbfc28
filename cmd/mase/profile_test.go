package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestProfileWritesATrace: `mase profile` prints JSON with the nodes and
// compiles, writes a Chrome trace, and overwrites its own trace on a
// second run.
func TestProfileWritesATrace(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bert.json")
	for round := 0; round < 2; round++ {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"profile", "--model", "bert-tiny", "--batch", "2", "--seq", "16", "--runs", "2", "--trace", out, "--json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("round %d: exit %d: %s", round, code, stderr.String())
		}
		var p struct {
			Mode     string           `json:"mode"`
			Nodes    []map[string]any `json:"nodes"`
			Compiles []map[string]any `json:"compiles"`
			WallS    float64          `json:"wall_s"`
			Flops    int64            `json:"flops"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout.String())
		}
		if p.Mode != "eager" || len(p.Nodes) < 20 || len(p.Compiles) == 0 || p.WallS <= 0 || p.Flops <= 0 {
			t.Errorf("round %d: mode %q, %d nodes, %d compiles, wall %v, %d FLOPs", round, p.Mode, len(p.Nodes), len(p.Compiles), p.WallS, p.Flops)
		}
		b, err := os.ReadFile(out)
		if err != nil || !json.Valid(b) || !bytes.HasPrefix(b, traceHeader) {
			t.Fatalf("round %d: the trace: %v, %.80s", round, err, b)
		}
	}
}

// TestProfileCompiledWithRewrites: --rewrites all profiles compiled mode
// as `mase bench compile` runs it (segments around the host kernels), the
// host kernels among the nodes and the FLOPs those of the plain graph;
// an unknown rewrite is refused.
func TestProfileCompiledWithRewrites(t *testing.T) {
	profile := func(rewrites string) (flops int64, ops map[string]bool, executables int) {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"profile", "--model", "bert-tiny", "--batch", "2", "--seq", "16", "--runs", "2", "--mode", "compiled", "--rewrites", rewrites, "--json"}, &stdout, &stderr); code != 0 {
			t.Fatalf("--rewrites %s: exit %d: %s", rewrites, code, stderr.String())
		}
		var p struct {
			Nodes []struct {
				Op string `json:"op"`
			} `json:"nodes"`
			Flops       int64 `json:"flops"`
			Executables int   `json:"executables"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &p); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, stdout.String())
		}
		ops = map[string]bool{}
		for _, n := range p.Nodes {
			ops[n.Op] = true
		}
		return p.Flops, ops, p.Executables
	}
	plain, _, _ := profile("none")
	flops, ops, executables := profile("all")
	if flops != plain || flops == 0 {
		t.Errorf("--rewrites all: %d FLOPs, none: %d; want the same", flops, plain)
	}
	if !ops["call_function gomase.sdpa_kernel"] || !ops["call_function gomase.gelu_kernel"] || executables < 2 {
		t.Errorf("--rewrites all: ops %v, %d executables; want the host kernels between compiled segments", ops, executables)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"profile", "--rewrites", "fast_everything"}, &stdout, &stderr); code == 0 || !bytes.Contains(stderr.Bytes(), []byte(`unknown rewrite "fast_everything"`)) {
		t.Errorf("an unknown rewrite: exit %d, %s", code, stderr.String())
	}
}

// TestProfileXLADumpRefusals: --xla-dump needs an XLA backend and a new or
// empty folder, and says so before any work.
func TestProfileXLADumpRefusals(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "go", "--xla-dump", filepath.Join(t.TempDir(), "hlo")}, "the go backend compiles no HLO"},
		{[]string{"--backend", "xla:/nonexistent/plugin.so", "--xla-dump", full}, "is not empty"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"profile"}, tc.args...), &stdout, &stderr)
		if code == 0 || !bytes.Contains(stderr.Bytes(), []byte(tc.want)) {
			t.Errorf("%v: exit %d, %s; want an error containing %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(full, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("the occupied folder's file: %q, %v", b, err)
	}
}
