package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// emitSim runs `mase emit` then `mase sim` and returns sim's stdout.
func emitSim(t *testing.T, emitArgs, simArgs []string) (dir, out string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "d")
	code, stdout, stderr := runCLI(append(append([]string{"emit"}, emitArgs...), "--out", dir)...)
	if code != 0 {
		t.Fatalf("mase emit %q: exit %d: %s", emitArgs, code, stderr)
	}
	t.Log(strings.TrimSpace(stdout))
	start := time.Now()
	code, out, stderr = runCLI(append([]string{"sim", dir}, simArgs...)...)
	t.Logf("mase sim %q (%.1fs): %s", simArgs, time.Since(start).Seconds(), strings.TrimSpace(out))
	if code != 0 {
		t.Fatalf("mase sim %q: exit %d: %s%s", simArgs, code, out, stderr)
	}
	return dir, out
}

// TestEmitSimBitExact is the lab flow from the command line: the MLP at
// parallelism 4 (the lab's), 2 and 1 streams random vectors through
// Verilator with random stalls and backpressure, every output bit-exact
// with the Go model. One Verilator build per configuration (p = 1 builds
// with --trace and writes a VCD). At p = 4 a wrong expectation is then
// planted (plantMismatch) and mase sim must fail.
func TestEmitSimBitExact(t *testing.T) {
	for _, tc := range []struct {
		name     string
		emitArgs []string
		vectors  string
		wave     bool
	}{
		{"p4", []string{"--model", "mlp", "--parallelism", "4"}, "1000", false},
		{"p2", []string{"--model", "mlp", "--parallelism", "2"}, "300", false},
		{"p1-wave", []string{"--model", "mlp", "--parallelism", "1"}, "100", true},
		// Slope 1/16 (spec §9 item 40): NEGATIVE_SLOPE_VALUE 1, PRECISION_1 4.
		{"leaky-p4", []string{"--model", "mlp", "--activation", "leaky_relu", "--negative-slope", "0.0625", "--parallelism", "4"}, "1000", false},
		// torch's default slope 0.01: NEGATIVE_SLOPE_VALUE 41, PRECISION_1 12,
		// more fraction bits than the slope's width.
		{"leaky-default-p2", []string{"--model", "mlp", "--activation", "leaky_relu", "--parallelism", "2"}, "1000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			simArgs := []string{"--vectors", tc.vectors, "--seed", "7"}
			var wave string
			if tc.wave {
				wave = filepath.Join(t.TempDir(), "w.vcd")
				simArgs = append(simArgs, "--wave", wave)
			}
			dir, out := emitSim(t, tc.emitArgs, simArgs)
			if want := tc.vectors + " vectors, " + tc.vectors + " matched"; !strings.HasPrefix(out, want) {
				t.Errorf("mase sim printed %q, want %q", out, want)
			}
			if tc.wave {
				b, err := os.ReadFile(wave)
				if err != nil || !strings.Contains(string(b), "$enddefinitions") || !strings.Contains(string(b), "data_out_0_valid") {
					t.Errorf("VCD %s: %v, %d bytes", wave, err, len(b))
				}
			}
			if tc.name == "p4" {
				plantMismatch(t, dir)
			}
		})
	}
}

// plantMismatch changes one bias of the Go model in dir's design.json (the
// ROM in the RTL keeps the emitted value): mase sim must report the
// mismatches and exit non-zero. The Verilator build is reused.
func plantMismatch(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "design.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	layer := d["layers"].([]any)[0].(map[string]any)
	bias := layer["bias"].([]any)
	bias[0] = bias[0].(float64) + 64 // +8.0 in Q5.3: output 0 of every vector moves
	b, _ = json.Marshal(d)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI("sim", dir, "--vectors", "50")
	t.Logf("planted mismatch: exit %d, %s", code, strings.TrimSpace(stderr))
	if code == 0 || !strings.Contains(out, "MISMATCH vector ") || !strings.Contains(out, " output 0: got") || !strings.Contains(stderr, "vectors mismatched") || !strings.Contains(out, "build cached") {
		t.Errorf("planted mismatch: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
}

func TestEmitSimErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"emit", "--model", "bert-tiny", "--out", dir}, "only mlp"},
		{[]string{"emit", "--model", "mlp"}, "--out DIR is missing"},
		{[]string{"emit", "--activation", "gelu", "--out", dir}, "unknown activation"},
		{[]string{"emit", "--parallelism", "0", "--out", dir}, "--parallelism 0"},
		{[]string{"emit", "--width", "8", "--frac-width", "8", "--out", dir}, "frac width 8"},
		{[]string{"sim"}, "DIR is missing"},
		{[]string{"sim", dir}, "run `mase emit` first"},
		{[]string{"sim", dir, dir}, "one DIR only"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("mase %q: exit %d, stderr %q; want an error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
