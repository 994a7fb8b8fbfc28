package emit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gomase/gomase/internal/atomicfile"
	"github.com/gomase/gomase/rtl"
	"github.com/gomase/gomase/rtl/emit"
)

// needVerilator skips a test where Verilator is not installed.
func needVerilator(t *testing.T) {
	t.Helper()
	if sim, err := rtl.FindSimulator(); err != nil || sim.Name != "verilator" {
		t.Skip("needs verilator")
	}
}

// TestSimulationsOnOneDesign: simulations running at the same time on one
// design folder (with different seeds) each check their own vectors —
// they used to share sim/in.hex and report a correct design as half
// mismatched — and leave no work folder behind; a work folder a killed
// run left is swept, one of a live process kept.
func TestSimulationsOnOneDesign(t *testing.T) {
	needVerilator(t)
	dir := t.TempDir()
	if _, err := emit.Verilog(labMLP(t, 4), dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	simDir := filepath.Join(dir, emit.SimDir)
	dead, live := filepath.Join(simDir, "run-2147483646-x"), filepath.Join(simDir, fmt.Sprintf("run-%d-y", os.Getpid()))
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	results := make([]*emit.SimResult, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: 200 + 50*i, Seed: uint64(i + 1)})
		}()
	}
	wg.Wait()
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if !res.OK() || res.Vectors != 200+50*i {
			t.Errorf("run %d: %d of %d vectors matched: %v", i, res.Matched, res.Vectors, res.Mismatches)
		}
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the work folder of a process no longer alive is still there (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the work folder of a live process was removed: %v", err)
	}
	os.Remove(live)
	if left, _ := filepath.Glob(filepath.Join(simDir, "run-*")); len(left) != 0 {
		t.Errorf("work folders left: %v", left)
	}
	// The last run's files are one run's: as many output beats as expected.
	lines := func(name string) int {
		data, err := os.ReadFile(filepath.Join(simDir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), "\n")
	}
	if in, want, got := lines("in.hex"), lines("expected.hex"), lines("out.hex"); in == 0 || want != got {
		t.Errorf("sim/in.hex %d lines, expected.hex %d, out.hex %d: want one run's", in, want, got)
	}
}

// TestSimulateChecksTheWaveformPathFirst: a waveform path that is a
// folder, in a missing folder or not .vcd is refused before any build
// (a folder used to be printed as the waveform and nothing written).
func TestSimulateChecksTheWaveformPathFirst(t *testing.T) {
	dir := t.TempDir()
	if _, err := emit.Verilog(labMLP(t, 4), dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(t.TempDir(), "w.vcd")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	for wave, want := range map[string]string{
		folder: "is a folder or special file (allowed: a file to write)",
		filepath.Join(t.TempDir(), "missing", "w.vcd"): "no folder",
		filepath.Join(t.TempDir(), "w.txt"):            "unsupported file extension (allowed: .vcd)",
	} {
		_, err := emit.Simulate(context.Background(), dir, emit.SimOptions{Vectors: 5, Wave: wave})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--wave %s: %v, want an error containing %q", wave, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, emit.SimDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused simulation made %s (%v)", emit.SimDir, err)
	}
}

// TestEmitIsAtomic: an emit that fails while writing (a full disk) leaves
// the folder's earlier design exactly as it was, and no temporary files.
func TestEmitIsAtomic(t *testing.T) {
	dir := t.TempDir()
	if _, err := emit.Verilog(labMLP(t, 4), dir, emit.Options{}); err != nil {
		t.Fatal(err)
	}
	before := folderText(t, dir)
	atomicfile.FailHook = func(step, path string) error {
		if step == "write" && filepath.Base(path) == "top_tb.sv" {
			return errors.New("no space left on device")
		}
		return nil
	}
	defer func() { atomicfile.FailHook = nil }()
	_, err := emit.Verilog(labMLP(t, 2), dir, emit.Options{})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("emit on a full disk: %v", err)
	}
	if after := folderText(t, dir); after != before {
		t.Errorf("a failed emit changed the folder:\nbefore %.300s\nafter  %.300s", before, after)
	}
}

// folderText is every file of dir with its content, in order.
func folderText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		fmt.Fprintf(&b, "== %s\n%s\n", p, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
